//! [`Module::outline`](crate::Module::outline): one walk over every scope of a file that
//! records imports, functions, calls, `if`s, loops and `try`s as plain data, for the linter.
//! Nothing here classifies: conditions are kept as text so the linter pays for
//! rank-dependence only where a collective makes it matter.

mod types;

pub use types::{
    Call, Clause, Conditional, Conjunct, Handler, Import, JumpStmt, LineRange, Loop, Membership,
    Outline, TryBlock,
};

use std::collections::HashSet;

use ruff_python_ast::{ExceptHandler, Expr, Stmt};
use ruff_text_size::Ranged;

use crate::control::branch::handler_jump_of;
use crate::syntax::expr::{self, dotted};
use crate::syntax::module::Module;
use crate::syntax::tree::{self, MAX_DEPTH, header_exprs, lines_of};
use crate::syntax::types::Construct;

/// Calls that end the process from an `except` body: the error does not go unnoticed.
const PROCESS_EXITS: &[&str] = &["sys.exit", "exit", "quit", "os._exit", "os.abort"];

/// Whether a dotted callee (`sys.exit`) ends the process.
pub(crate) fn is_process_exit(name: &str) -> bool {
    PROCESS_EXITS.contains(&name)
}

/// The outline of `module`; with `calls_at`, only the calls at those (line, column) positions
/// are recorded (each one costs the text of its callee and arguments).
pub(crate) fn build(module: &Module, calls_at: Option<&HashSet<(u32, u32)>>) -> Outline {
    let call_lines = calls_at.map(|at| at.iter().map(|&(line, _)| line).collect());
    let mut walker =
        Walker { module, out: Outline::default(), function: Vec::new(), calls_at, call_lines };
    walker.suite(module.body(), 0);
    walker.out.calls.sort_by_key(|c| (c.line, c.column));
    walker.out
}

struct Walker<'m> {
    module: &'m Module,
    out: Outline,
    /// `def` lines of the functions around the statement being walked, innermost last.
    function: Vec<u32>,
    calls_at: Option<&'m HashSet<(u32, u32)>>,
    /// The lines of `calls_at` (a column is counted in characters: only on those lines).
    call_lines: Option<HashSet<u32>>,
}

impl Walker<'_> {
    fn suite(&mut self, suite: &[Stmt], depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        for stmt in suite {
            self.stmt(stmt, depth);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) {
        let module = self.module;
        let function = self.function.last().copied();
        self.calls(stmt, function);
        match stmt {
            Stmt::Import(s) => {
                for alias in &s.names {
                    let full = alias.name.id.as_str();
                    let (module_name, bound) = if let Some(a) = &alias.asname {
                        (full.to_owned(), a.id.to_string())
                    } else {
                        let root = full.split('.').next().unwrap_or(full);
                        (root.to_owned(), root.to_owned())
                    };
                    self.import(stmt, module_name, None, bound);
                }
            }
            Stmt::ImportFrom(s) => {
                let dots = ".".repeat(s.level as usize);
                let base = format!("{dots}{}", s.module.as_ref().map_or("", |m| m.id.as_str()));
                for alias in &s.names {
                    let name = alias.name.id.to_string();
                    let bound =
                        alias.asname.as_ref().map_or_else(|| name.clone(), |a| a.id.to_string());
                    self.import(stmt, base.clone(), Some(name), bound);
                }
            }
            Stmt::FunctionDef(def) => {
                let line = module.line_of(def.name.start());
                if let Some(f) = module.function_at(line) {
                    self.out.functions.push(f);
                }
                self.function.push(line);
                self.suite(&def.body, depth + 1);
                self.function.pop();
                return;
            }
            Stmt::If(s) => {
                let mut clauses = vec![self.clause(s.start(), Some(&s.test), &s.body)];
                for c in &s.elif_else_clauses {
                    clauses.push(self.clause(c.start(), c.test.as_ref(), &c.body));
                }
                let (line, column) = self.position(stmt);
                self.out.conditionals.push(Conditional { line, column, function, clauses });
            }
            Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_) => {
                let construct = match stmt {
                    Stmt::Continue(_) => Construct::Continue,
                    Stmt::Break(_) => Construct::Break,
                    _ => Construct::Return,
                };
                let (line, column) = self.position(stmt);
                self.out.jumps.push(JumpStmt { line, column, construct, function });
            }
            Stmt::For(s) => self.a_loop(stmt, function, &s.iter, &s.body, false),
            Stmt::While(s) => self.a_loop(stmt, function, &s.test, &s.body, true),
            Stmt::Try(s) if !s.handlers.is_empty() => {
                let handlers = s.handlers.iter().map(|h| self.handler(h)).collect();
                self.out.tries.push(TryBlock {
                    line: module.line_of(s.start()),
                    function,
                    body: self.range(&s.body),
                    handlers,
                    end_line: lines_of(module, s).1,
                });
            }
            _ => {}
        }
        for block in tree::blocks(stmt) {
            self.suite(block.suite, depth + 1);
        }
    }

    fn import(&mut self, stmt: &Stmt, module: String, name: Option<String>, alias: String) {
        let line = self.module.line_of(stmt.start());
        self.out.imports.push(Import { line, module, name, alias });
    }

    fn position(&self, node: &impl Ranged) -> (u32, u32) {
        (self.module.line_of(node.start()), self.module.column_of(node.start()))
    }

    fn range(&self, suite: &[Stmt]) -> LineRange {
        match (suite.first(), suite.last()) {
            (Some(first), Some(last)) => LineRange {
                first: lines_of(self.module, first).0,
                last: lines_of(self.module, last).1,
            },
            _ => LineRange { first: 0, last: 0 },
        }
    }

    fn clause(
        &self,
        start: ruff_text_size::TextSize,
        test: Option<&Expr>,
        body: &[Stmt],
    ) -> Clause {
        Clause {
            line: self.module.line_of(start),
            test: test.map(|t| self.module.text(t.range()).to_owned()),
            test_line: test.map(|t| self.module.line_of(t.start())),
            body: self.range(body),
            membership: test.and_then(|t| self.membership(t)),
            conjuncts: test.map(|t| self.conjuncts(t)).unwrap_or_default(),
        }
    }

    /// The operands of `test`'s top-level `and`, each without its leading `not`.
    fn conjuncts(&self, test: &Expr) -> Vec<Conjunct> {
        let literal = |e: &Expr| match e {
            Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not => {
                Conjunct { text: self.module.text(u.operand.range()).to_owned(), negated: true }
            }
            e => Conjunct { text: self.module.text(e.range()).to_owned(), negated: false },
        };
        match test {
            Expr::BoolOp(b) if b.op == ruff_python_ast::BoolOp::And => {
                b.values.iter().map(literal).collect()
            }
            e => vec![literal(e)],
        }
    }

    /// `x in c`, `x not in c`, `not x in c`, or one of them joined to others by `and` (for
    /// `x in c`: the clause runs only on members).
    fn membership(&self, test: &Expr) -> Option<Membership> {
        match test {
            Expr::Compare(c) if c.ops.len() == 1 => {
                let negated = match c.ops[0] {
                    ruff_python_ast::CmpOp::In => false,
                    ruff_python_ast::CmpOp::NotIn => true,
                    _ => return None,
                };
                Some(Membership { member: self.module.text(c.left.range()).to_owned(), negated })
            }
            Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not => self
                .membership(&u.operand)
                .filter(|m| !m.negated)
                .map(|m| Membership { negated: true, ..m }),
            Expr::BoolOp(b) if b.op == ruff_python_ast::BoolOp::And => {
                b.values.iter().filter_map(|v| self.membership(v)).find(|m| !m.negated)
            }
            _ => None,
        }
    }

    fn a_loop(
        &mut self,
        stmt: &Stmt,
        function: Option<u32>,
        header: &Expr,
        body: &[Stmt],
        is_while: bool,
    ) {
        let (line, column) = self.position(stmt);
        self.out.loops.push(Loop {
            line,
            column,
            function,
            is_while,
            header: self.module.text(header.range()).to_owned(),
            header_line: self.module.line_of(header.start()),
            body: self.range(body),
        });
    }

    fn handler(&self, handler: &ExceptHandler) -> Handler {
        let ExceptHandler::ExceptHandler(h) = handler;
        let (line, column) = self.position(h);
        let caught = h.name.as_ref().map(|n| n.id.as_str());
        let propagates = always_exits(&h.body, caught, &mut |_| false, 0);
        Handler {
            line,
            column,
            exception: h.type_.as_ref().map(|t| self.module.text(t.range()).to_owned()),
            caught: crate::values::classify::caught_classes(handler),
            body: self.range(&h.body),
            jump: handler_jump_of(self.module, handler),
            propagates,
        }
    }

    /// Records the calls a statement evaluates itself (its header, for a compound one).
    fn calls(&mut self, stmt: &Stmt, function: Option<u32>) {
        let module = self.module;
        // The whole value of an assignment, and its targets (their text is made only for a
        // call that is recorded).
        let assigned: Option<(&Expr, Vec<&Expr>)> = match stmt {
            Stmt::Assign(s) => Some((&*s.value, s.targets.iter().collect())),
            Stmt::AnnAssign(s) => s.value.as_deref().map(|v| (v, vec![&*s.target])),
            _ => None,
        };
        for e in header_exprs(stmt) {
            expr::walk(e, &mut |x| {
                let Expr::Call(c) = x else { return };
                let line = module.line_of(c.start());
                if self.call_lines.as_ref().is_some_and(|lines| !lines.contains(&line)) {
                    return;
                }
                let column = module.column_of(c.start());
                if self.calls_at.is_some_and(|at| !at.contains(&(line, column))) {
                    return;
                }
                let callee =
                    dotted(&c.func).unwrap_or_else(|| module.text(c.func.range()).to_owned());
                let keywords = c
                    .arguments
                    .keywords
                    .iter()
                    .map(|k| {
                        let name =
                            k.arg.as_ref().map_or_else(|| "**".to_owned(), |a| a.id.to_string());
                        (name, module.text(k.value.range()).to_owned())
                    })
                    .collect();
                let assigned_to = match &assigned {
                    Some((value, targets)) if std::ptr::eq(*value, x) => {
                        targets.iter().map(|t| module.text(t.range()).to_owned()).collect()
                    }
                    _ => Vec::new(),
                };
                self.out.calls.push(Call {
                    line,
                    column,
                    callee,
                    function,
                    arguments: c
                        .arguments
                        .args
                        .iter()
                        .map(|a| module.text(a.range()).to_owned())
                        .collect(),
                    keywords,
                    assigned_to,
                });
            });
        }
    }
}

/// Whether every path through `suite` passes an error on: it raises, hands the error it
/// caught (`caught`: the handler's `as` name) to another thread or process that raises it
/// there (a method of the table's `error_handoffs`: `parent_conn.send(e)`), or ends the
/// process (`sys.exit`, `os._exit`, `os.abort`), on every branch. `if "out of memory" in
/// str(e): skip() else: raise` does not: the ranks that ran out of memory swallow the error.
/// `never_returns` says whether a call (of a project function) never returns: its every path
/// raises or ends the process too ([`crate::Analysis::dying_handlers`]).
pub(crate) fn always_exits(
    suite: &[Stmt],
    caught: Option<&str>,
    never_returns: &mut dyn FnMut(&ruff_python_ast::ExprCall) -> bool,
    depth: usize,
) -> bool {
    if depth >= MAX_DEPTH {
        return false;
    }
    suite.iter().any(|stmt| match stmt {
        Stmt::Raise(_) => true,
        Stmt::Expr(s) => match &*s.value {
            Expr::Call(c) => {
                dotted(&c.func).is_some_and(|d| PROCESS_EXITS.contains(&d.as_str()))
                    || hands_off(c, caught)
                    || never_returns(c)
            }
            _ => false,
        },
        Stmt::If(s) => {
            s.elif_else_clauses.last().is_some_and(|c| c.test.is_none())
                && always_exits(&s.body, caught, never_returns, depth + 1)
                && s.elif_else_clauses
                    .iter()
                    .all(|c| always_exits(&c.body, caught, never_returns, depth + 1))
        }
        Stmt::With(s) => always_exits(&s.body, caught, never_returns, depth + 1),
        Stmt::Try(s) => {
            always_exits(&s.finalbody, caught, never_returns, depth + 1)
                || (always_exits(&s.body, caught, never_returns, depth + 1)
                    && s.handlers.iter().all(|h| {
                        let ExceptHandler::ExceptHandler(h) = h;
                        always_exits(&h.body, caught, never_returns, depth + 1)
                    }))
        }
        _ => false,
    })
}

/// `conn.send(e)`: a method of the table's `error_handoffs` given the caught exception itself.
fn hands_off(c: &ruff_python_ast::ExprCall, caught: Option<&str>) -> bool {
    let Some(caught) = caught else { return false };
    let Expr::Attribute(method) = &*c.func else { return false };
    crate::names::knowledge::knowledge().hands_off_errors(method.attr.id.as_str())
        && c.arguments.args.iter().any(|a| matches!(a, Expr::Name(n) if n.id.as_str() == caught))
}

#[cfg(test)]
mod tests;
