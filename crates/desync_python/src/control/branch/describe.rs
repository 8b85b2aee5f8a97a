//! Turns a [`Candidate`] into the public [`Branch`]: line, keyword, source text, the deciding
//! condition and its rank-dependence.

use ruff_python_ast::{ExceptHandler, Expr, Stmt, StmtTry};
use ruff_text_size::Ranged;

use super::{Candidate, Decider, Guard};
use crate::syntax::expr::snippet;
use crate::syntax::module::Module;
use crate::syntax::types::{Branch, Construct, Dependence, DependenceKind, Jump};
use crate::values::Analysis;
use crate::values::classify::enclosing_handler;

pub(super) fn branch(cx: &Analysis<'_>, module: &Module, candidate: &Candidate<'_>) -> Branch {
    let parts = match candidate.decider {
        Decider::If { stmt, clause } => {
            let clause = clause.and_then(|i| stmt.elif_else_clauses.get(i));
            match clause.and_then(|c| c.test.as_ref().map(|t| (c, t))) {
                Some((c, test)) => Parts::new(cx, module, Construct::Elif, c.start(), Some(test)),
                None => Parts::new(cx, module, Construct::If, stmt.start(), Some(&stmt.test)),
            }
        }
        Decider::Loop(stmt) => match stmt {
            Stmt::For(s) => {
                // How many times the loop runs is what differs, not what its items hold.
                let mut parts = Parts::new(cx, module, Construct::For, s.start(), None);
                parts.set_length_condition(cx, module, s.start(), &s.iter);
                parts
            }
            Stmt::While(s) => Parts::new(cx, module, Construct::While, s.start(), Some(&s.test)),
            _ => Parts::new(cx, module, Construct::For, stmt.start(), None),
        },
        Decider::Except { stmt, handler } => except(cx, module, stmt, handler),
        Decider::With(stmt) => {
            let mut parts = Parts::new(cx, module, Construct::With, stmt.start(), None);
            let items: Vec<&str> =
                stmt.items.iter().map(|i| module.text(i.context_expr.range())).collect();
            parts.condition = Some(items.join(", "));
            parts.condition_line = Some(parts.line);
            parts.dependence.push(Dependence::new(
                DependenceKind::Exception,
                format!("`{}` swallows exceptions", snippet(&items.join(", "))),
            ));
            parts
        }
        Decider::ChosenContext { stmt, test } => {
            let mut parts = Parts::new(cx, module, Construct::With, stmt.start(), None);
            parts.set_condition(cx, module, stmt.start(), test);
            parts
        }
        Decider::Jump(target) => match target.guard {
            Guard::If { stmt, clause } => {
                let mut parts = Parts::new(cx, module, target.construct, target.stmt.start(), None);
                let clause = clause.and_then(|i| stmt.elif_else_clauses.get(i));
                let (start, test) = match clause.and_then(|c| c.test.as_ref().map(|t| (c, t))) {
                    Some((c, test)) => (c.start(), test),
                    // The body and the `else` of an `if` are both decided by its own test.
                    None => (stmt.start(), &*stmt.test),
                };
                parts.set_condition(cx, module, start, test);
                parts
            }
            Guard::Handler { stmt, index } => except(cx, module, stmt, index),
        },
    };
    let mut branch = finish(module, parts, candidate.skipped_line);
    branch.indirect = candidate.indirect;
    branch
}

/// The line [`branch`] gives the [`Branch`] it describes for `candidate`, found without
/// asking what its condition depends on (the costly part).
pub(super) fn line(module: &Module, candidate: &Candidate<'_>) -> u32 {
    let handler_line = |stmt: &StmtTry, index: usize| match stmt.handlers.get(index) {
        Some(ExceptHandler::ExceptHandler(h)) => module.line_of(h.start()),
        None => module.line_of(stmt.start()),
    };
    match candidate.decider {
        Decider::If { stmt, clause } => {
            match clause.and_then(|i| stmt.elif_else_clauses.get(i)).filter(|c| c.test.is_some()) {
                Some(c) => module.line_of(c.start()),
                None => module.line_of(stmt.start()),
            }
        }
        Decider::Loop(stmt) => module.line_of(stmt.start()),
        Decider::Except { stmt, handler } => handler_line(stmt, handler),
        Decider::With(stmt) | Decider::ChosenContext { stmt, .. } => module.line_of(stmt.start()),
        Decider::Jump(target) => match target.guard {
            Guard::If { .. } => target.line,
            Guard::Handler { stmt, index } => handler_line(stmt, index),
        },
    }
}

/// A conditional expression (`order = [a, b] if c else [b, a]`) decides like an `if` written
/// at its statement.
pub(super) fn conditional_expression(
    cx: &Analysis<'_>,
    module: &Module,
    stmt: &Stmt,
    test: &Expr,
) -> Branch {
    let mut parts = Parts::new(cx, module, Construct::If, stmt.start(), None);
    parts.set_condition(cx, module, stmt.start(), test);
    finish(module, parts, None)
}

fn finish(module: &Module, mut parts: Parts, skipped_line: Option<u32>) -> Branch {
    if parts.construct != Construct::Except
        && !parts.dependence.iter().any(|d| d.kind == DependenceKind::Exception)
        && let Some(evidence) = enclosing_handler(module, parts.line)
    {
        parts.dependence.push(Dependence::new(DependenceKind::Exception, evidence));
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
        length_parameters: parts.length_parameters,
        member_reads: parts.member_reads,
        agreed: parts.agreed,
        configuration: parts.configuration,
        complete: parts.complete,
        indirect: false,
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
    length_parameters: Vec<String>,
    member_reads: Vec<(String, Vec<String>)>,
    agreed: Vec<String>,
    configuration: Vec<String>,
    complete: bool,
    jump: Option<Jump>,
}

impl Parts {
    /// A construct at `start`, decided by `condition` evaluated there.
    fn new(
        cx: &Analysis<'_>,
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
            length_parameters: Vec::new(),
            member_reads: Vec::new(),
            agreed: Vec::new(),
            configuration: Vec::new(),
            complete: false,
            jump: None,
        };
        if let Some(test) = condition {
            parts.set_condition(cx, module, start, test);
        }
        parts
    }

    fn set_length_condition(
        &mut self,
        cx: &Analysis<'_>,
        module: &Module,
        start: ruff_text_size::TextSize,
        iterable: &Expr,
    ) {
        self.condition = Some(module.text(iterable.range()).to_owned());
        self.condition_line = Some(module.line_of(iterable.start()));
        let deps = cx.length_of(module, iterable, start);
        self.set_dependence(deps);
    }

    fn set_dependence(&mut self, deps: crate::values::Deps) {
        self.dependence = deps.to_public();
        self.complete =
            deps.opaque.is_none() && deps.params.is_empty() && deps.length_params.is_empty();
        self.member_reads = deps
            .params
            .iter()
            .map(|p| (p.clone(), deps.members_of(p)))
            .filter(|(_, attributes)| !attributes.is_empty())
            .collect();
        self.parameters = deps.params;
        self.length_parameters = deps.length_params;
        self.agreed = deps.agreed;
        self.configuration = deps.config;
    }

    fn set_condition(
        &mut self,
        cx: &Analysis<'_>,
        module: &Module,
        start: ruff_text_size::TextSize,
        test: &Expr,
    ) {
        self.condition = Some(module.text(test.range()).to_owned());
        self.condition_line = Some(module.line_of(test.start()));
        let deps = cx.dependence_of(module, test, start);
        self.set_dependence(deps);
    }
}

/// An `except` clause: only the ranks that raised run it; its jump, if any, says where they go.
fn except(cx: &Analysis<'_>, module: &Module, stmt: &StmtTry, index: usize) -> Parts {
    let Some(handler) = stmt.handlers.get(index) else {
        return Parts::new(cx, module, Construct::Try, stmt.start(), None);
    };
    let ExceptHandler::ExceptHandler(h) = handler;
    let mut parts = Parts::new(cx, module, Construct::Except, h.start(), None);
    let clause = match &h.type_ {
        Some(ty) => {
            parts.condition = Some(module.text(ty.range()).to_owned());
            parts.condition_line = Some(parts.line);
            format!("except {}", snippet(module.text(ty.range())))
        }
        None => "except".to_owned(),
    };
    parts.dependence.push(Dependence::new(
        DependenceKind::Exception,
        format!("`{clause}` at line {} runs only on ranks that raised", parts.line),
    ));
    parts.jump = super::handler_jump_of(module, handler);
    parts
}
