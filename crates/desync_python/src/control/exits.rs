//! Functions that never return: every path through their body raises or ends the process
//! (`sys.exit`, `os._exit`), directly or through another such function, or their return
//! annotation says so (`-> NoReturn`). An `except` that calls one passes the error on as one
//! that raises does: the rank dies loudly and torchrun stops its peers.

use ruff_python_ast::{ExceptHandler, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;

use crate::control::outline::{Outline, always_exits};
use crate::names::bindings::Scope;
use crate::syntax::module::Module;
use crate::syntax::tree;
use crate::values::Analysis;
use crate::values::resolve::Sym;
use crate::values::value::Eval;

/// How many calls deep a helper that never returns is followed (`fatal` calling `abort_run`).
const MAX_EXIT_DEPTH: usize = 3;

/// Return annotations that say a function never returns.
const NEVER_RETURNS: &[&str] = &["NoReturn", "Never"];

impl Analysis<'_> {
    /// Marks as passing the error on (`Handler::propagates`) the `except` clauses of
    /// `outline` (made from `module`) whose every path ends in a call of a project function
    /// that never returns (`except RuntimeError as e: fatal(f"step failed: {e}")`), besides
    /// those that raise or exit themselves.
    pub fn mark_dying_handlers(&self, module: &Module, outline: &mut Outline) {
        let pending: Vec<u32> = outline
            .tries
            .iter()
            .flat_map(|t| t.handlers.iter().filter(|h| !h.propagates).map(|h| h.line))
            .collect();
        if pending.is_empty() {
            return;
        }
        let mut handlers = Vec::new();
        tree::walk_all(module.body(), &mut |stmt| {
            if let Stmt::Try(t) = stmt {
                handlers.extend(
                    t.handlers.iter().filter(|h| pending.contains(&module.line_of(h.start()))),
                );
            }
        });
        let mut dying = Vec::new();
        for handler in handlers {
            let ExceptHandler::ExceptHandler(h) = handler;
            let line = module.line_of(h.start());
            let mut eval = Eval::new(self, module, Scope::at(module, line), 0);
            let caught = h.name.as_ref().map(|n| n.id.as_str());
            if always_exits(&h.body, caught, &mut |c| never_returns(&mut eval, c, 0), 0) {
                dying.push(line);
            }
        }
        for t in &mut outline.tries {
            for h in t.handlers.iter_mut().filter(|h| dying.contains(&h.line)) {
                h.propagates = true;
            }
        }
    }
}

/// Whether the call `c` is of a project function that never returns.
fn never_returns(eval: &mut Eval<'_, '_>, c: &ExprCall, depth: usize) -> bool {
    if depth >= MAX_EXIT_DEPTH {
        return false;
    }
    let Sym::Function(f) = eval.resolve(&c.func, c.start()) else { return false };
    eval.in_function(&f, |there, def| function_never_returns(there, def, depth)).unwrap_or(false)
}

/// Whether `def` never returns: annotated so, or no `return` (nor `yield`: a generator returns
/// at once) in its own body, and every path through it raises or exits.
fn function_never_returns(eval: &mut Eval<'_, '_>, def: &StmtFunctionDef, depth: usize) -> bool {
    if let Some(annotation) = def.returns.as_deref()
        && crate::syntax::expr::last_segment(annotation).is_some_and(|n| NEVER_RETURNS.contains(&n))
    {
        return true;
    }
    let mut returns = false;
    tree::walk_scope(&def.body, &mut |stmt, _| {
        returns |= matches!(stmt, Stmt::Return(_));
    });
    if returns || yields(eval.module, def) {
        return false;
    }
    always_exits(&def.body, None, &mut |c| never_returns(eval, c, depth + 1), 0)
}

/// Whether `def`'s text holds a `yield` (a nested function's counts too: a cheap, safe side).
fn yields(module: &Module, def: &StmtFunctionDef) -> bool {
    module.text(def.range()).contains("yield")
}

/// A way out of a function before a line ([`Analysis::exits_before`]).
#[derive(Debug, Clone)]
pub struct ExitBefore {
    /// The module the exit is in; `None`: the module asked about.
    pub module: Option<std::sync::Arc<Module>>,
    /// The line of the `return`/`raise`, or of the call that ends the process.
    pub line: u32,
    /// `return`, `raise`, or the exiting call as written (`sys.exit`, `abort`).
    pub how: String,
    /// Project calls followed from the function asked about to reach it (0: in it).
    pub depth: usize,
}

impl Analysis<'_> {
    /// How a rank leaves the function around `line` without reaching `line`: the `return`s
    /// and `raise`s nested in the function's compound statements above it, and the calls
    /// above it that end the process (`sys.exit`, `os._exit`, a project helper that never
    /// returns), there or inside the project functions called above it (followed
    /// [`MAX_EXIT_DEPTH`] calls deep, where only process exits count: a callee's `return`
    /// comes back). A rank that is not where its peers wait at `line` and issued nothing
    /// after took one of these, or never got this far. Source order, the function's own first.
    pub fn exits_before(&self, module: &Module, line: u32) -> Vec<ExitBefore> {
        let Some(def) = module.path(line).and_then(|p| p.innermost_function(module)) else {
            return Vec::new();
        };
        let mut eval = Eval::new(self, module, Scope::of(module, Some(def)), 0);
        let mut out = Vec::new();
        exits_in(&mut eval, &def.body, Some(line), None, 0, &mut out);
        out
    }
}

fn exits_in(
    eval: &mut Eval<'_, '_>,
    suite: &[Stmt],
    before: Option<u32>,
    module: Option<&std::sync::Arc<Module>>,
    depth: usize,
    out: &mut Vec<ExitBefore>,
) {
    let here = eval.module;
    let mut calls: Vec<&ExprCall> = Vec::new();
    tree::walk_scope(suite, &mut |stmt, frames| {
        let at = here.line_of(stmt.start());
        if before.is_some_and(|b| at >= b) {
            return;
        }
        let jump = match stmt {
            Stmt::Return(_) => Some("return"),
            Stmt::Raise(_) => Some("raise"),
            _ => None,
        };
        // A jump at the function's top level leaves every rank alike; one nested in a
        // compound statement is decided by its condition.
        if let Some(how) = jump.filter(|_| depth == 0 && !frames.is_empty()) {
            out.push(ExitBefore { module: module.cloned(), line: at, how: how.into(), depth });
        }
        for e in tree::header_exprs(stmt) {
            crate::syntax::expr::walk(e, &mut |x| {
                if let ruff_python_ast::Expr::Call(c) = x {
                    calls.push(c);
                }
            });
        }
    });
    for c in calls {
        let at = here.line_of(c.start());
        let name = crate::syntax::expr::dotted(&c.func);
        if name.as_deref().is_some_and(crate::control::outline::is_process_exit)
            || never_returns(eval, c, 0)
        {
            let how = name.unwrap_or_else(|| here.text(c.func.range()).to_owned());
            out.push(ExitBefore { module: module.cloned(), line: at, how, depth });
            continue;
        }
        if depth + 1 >= MAX_EXIT_DEPTH {
            continue;
        }
        let Sym::Function(f) = eval.resolve(&c.func, c.start()) else { continue };
        let callee_module = f.module.clone();
        let inner = callee_module.as_ref().or(module);
        eval.in_function(&f, |there, def| exits_in(there, &def.body, None, inner, depth + 1, out));
    }
}
