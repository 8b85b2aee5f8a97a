//! Turns a [`Candidate`] into the public [`Branch`]: line, keyword, source text, the deciding
//! condition and its rank-dependence.

use ruff_python_ast::{ExceptHandler, Expr, Stmt, StmtTry};
use ruff_text_size::Ranged;

use super::{Candidate, Decider, Guard};
use crate::dependence::{Classifier, enclosing_handler};
use crate::expr::snippet;
use crate::module::Module;
use crate::types::{Branch, Construct, Dependence, DependenceKind, Jump};

pub(super) fn branch(module: &Module, candidate: &Candidate<'_>) -> Branch {
    let parts = match candidate.decider {
        Decider::If { stmt, clause } => {
            let clause = clause.and_then(|i| stmt.elif_else_clauses.get(i));
            match clause.and_then(|c| c.test.as_ref().map(|t| (c, t))) {
                Some((c, test)) => Parts::new(module, Construct::Elif, c.start(), Some(test)),
                None => Parts::new(module, Construct::If, stmt.start(), Some(&stmt.test)),
            }
        }
        Decider::Loop(stmt) => match stmt {
            Stmt::For(s) => Parts::new(module, Construct::For, s.start(), Some(&s.iter)),
            Stmt::While(s) => Parts::new(module, Construct::While, s.start(), Some(&s.test)),
            _ => Parts::new(module, Construct::For, stmt.start(), None),
        },
        Decider::Except { stmt, handler } => except(module, stmt, handler),
        Decider::With(stmt) => {
            let mut parts = Parts::new(module, Construct::With, stmt.start(), None);
            let items: Vec<&str> =
                stmt.items.iter().map(|i| module.text(i.context_expr.range())).collect();
            parts.condition = Some(items.join(", "));
            parts.condition_line = Some(parts.line);
            parts.dependence.push(Dependence {
                kind: DependenceKind::Exception,
                evidence: format!("`{}` swallows exceptions", snippet(&items.join(", "))),
            });
            parts
        }
        Decider::Jump(target) => match target.guard {
            Guard::If { stmt, clause } => {
                let mut parts = Parts::new(module, target.construct, target.stmt.start(), None);
                let clause = clause.and_then(|i| stmt.elif_else_clauses.get(i));
                let (start, test) = match clause.and_then(|c| c.test.as_ref().map(|t| (c, t))) {
                    Some((c, test)) => (c.start(), test),
                    // The body and the `else` of an `if` are both decided by its own test.
                    None => (stmt.start(), &*stmt.test),
                };
                parts.set_condition(module, start, test);
                parts
            }
            Guard::Handler { stmt, index } => except(module, stmt, index),
        },
    };
    finish(module, parts, candidate.skipped_line)
}

/// A conditional expression (`order = [a, b] if c else [b, a]`) decides like an `if` written
/// at its statement.
pub(super) fn conditional_expression(module: &Module, stmt: &Stmt, test: &Expr) -> Branch {
    let mut parts = Parts::new(module, Construct::If, stmt.start(), None);
    parts.set_condition(module, stmt.start(), test);
    finish(module, parts, None)
}

fn finish(module: &Module, mut parts: Parts, skipped_line: Option<u32>) -> Branch {
    if parts.construct != Construct::Except
        && !parts.dependence.iter().any(|d| d.kind == DependenceKind::Exception)
        && let Some(evidence) = enclosing_handler(module, parts.line)
    {
        parts.dependence.push(Dependence { kind: DependenceKind::Exception, evidence });
    }
    Branch {
        line: parts.line,
        construct: parts.construct,
        function: module.function_at(parts.line).map(|f| f.name),
        source: module.line_text(parts.line).unwrap_or("").trim().to_owned(),
        condition: parts.condition,
        condition_line: parts.condition_line,
        dependence: parts.dependence,
        skipped_line,
        jump: parts.jump,
        parameters: parts.parameters,
    }
}

/// A [`Branch`] under construction.
struct Parts {
    construct: Construct,
    line: u32,
    condition: Option<String>,
    condition_line: Option<u32>,
    dependence: Vec<Dependence>,
    parameters: Vec<String>,
    jump: Option<Jump>,
}

impl Parts {
    /// A construct at `start`, decided by `condition` evaluated there.
    fn new(
        module: &Module,
        construct: Construct,
        start: ruff_text_size::TextSize,
        condition: Option<&Expr>,
    ) -> Parts {
        let mut parts = Parts {
            construct,
            line: module.line_of(start),
            condition: None,
            condition_line: None,
            dependence: Vec::new(),
            parameters: Vec::new(),
            jump: None,
        };
        if let Some(test) = condition {
            parts.set_condition(module, start, test);
        }
        parts
    }

    fn set_condition(&mut self, module: &Module, start: ruff_text_size::TextSize, test: &Expr) {
        self.condition = Some(module.text(test.range()).to_owned());
        self.condition_line = Some(module.line_of(test.start()));
        let mut classifier = Classifier::at_line(module, module.line_of(start));
        classifier.expr(test, module.source(), start);
        (self.dependence, self.parameters) = classifier.finish_with_parameters();
    }
}

/// An `except` clause: only the ranks that raised run it; its jump, if any, says where they go.
fn except(module: &Module, stmt: &StmtTry, index: usize) -> Parts {
    let Some(handler) = stmt.handlers.get(index) else {
        return Parts::new(module, Construct::Try, stmt.start(), None);
    };
    let ExceptHandler::ExceptHandler(h) = handler;
    let mut parts = Parts::new(module, Construct::Except, h.start(), None);
    let clause = match &h.type_ {
        Some(ty) => {
            parts.condition = Some(module.text(ty.range()).to_owned());
            parts.condition_line = Some(parts.line);
            format!("except {}", snippet(module.text(ty.range())))
        }
        None => "except".to_owned(),
    };
    parts.dependence.push(Dependence {
        kind: DependenceKind::Exception,
        evidence: format!("`{clause}` at line {} runs only on ranks that raised", parts.line),
    });
    parts.jump = super::handler_jump_of(module, handler);
    parts
}
