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
