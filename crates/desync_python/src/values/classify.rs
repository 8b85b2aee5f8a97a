//! The simple entry points of the values layer ([`classify_expression`]) and the facts about
//! `except` handlers that values and control both read (which handler a line is in, whether it
//! catches only structural exceptions). The analysis itself is the rest of [`crate::values`].

use ruff_python_ast::{ExceptHandler, Expr, Stmt};
use ruff_text_size::Ranged;

use crate::syntax::module::Module;
use crate::syntax::tree::Slot;
use crate::syntax::types::Dependence;
use crate::values::Analysis;

/// Classifies `expr_source` (a Python expression) as if written at 1-based `line` of `module`
/// (see [`Analysis::dependence`]; this one sees no other file of the project). Text that does
/// not parse as an expression is classified as far as the parser recovered it.
pub fn classify_expression(module: &Module, line: u32, expr_source: &str) -> Vec<Dependence> {
    classify_expression_with(module, line, expr_source, ClassifyOptions::default())
}

/// Assumptions [`classify_expression_with`] may make.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClassifyOptions {
    /// Kept for callers that set it: configuration reads (`args.lr`, `sys.argv`) are now
    /// always taken as the same on every rank (every rank is launched with the same command
    /// line), and reported as configuration, never as host or environment dependence.
    pub uniform_config: bool,
}

/// [`classify_expression`] under `options`.
pub fn classify_expression_with(
    module: &Module,
    line: u32,
    expr_source: &str,
    _options: ClassifyOptions,
) -> Vec<Dependence> {
    Analysis::default().dependence(module, line, expr_source).dependence
}

/// "inside `except ValueError` at line 12" when `line` lies in an `except` body of its
/// function: only ranks that raised run that code.
pub(crate) fn enclosing_handler(module: &Module, line: u32) -> Option<String> {
    enclosing_handler_of(module, line).map(|(evidence, _, _)| evidence)
}

/// [`enclosing_handler`], whether that handler catches only exceptions that signal the
/// program's structure ([`structural_handler`]), and the body of its `try`.
pub(crate) fn enclosing_handler_of(module: &Module, line: u32) -> Option<(String, bool, &[Stmt])> {
    let path = module.path(line)?;
    path.scope_levels(module).iter().rev().find_map(|level| {
        let (Some(Stmt::Try(t)), Slot::Handler(i)) = (level.owner, level.slot) else { return None };
        let handler = t.handlers.get(i)?;
        let ExceptHandler::ExceptHandler(h) = handler;
        let clause = h.type_.as_ref().map_or_else(
            || "except".to_owned(),
            |ty| format!("except {}", crate::syntax::expr::snippet(module.text(ty.range()))),
        );
        let evidence = format!("inside `{clause}` at line {}", module.line_of(h.start()));
        Some((evidence, structural_handler(handler), &t.body[..]))
    })
}

/// Whether `handler` catches only exceptions of the table's `structural_exceptions`
/// (`except (TypeError, NotImplementedError)` around `len(loader)`): they come from the types
/// and the code every rank runs alike, so the handler is not shown to run on some ranks only;
/// a reason through it is indirect evidence. A bare `except`, `Exception` or any other class
/// is a caught exception as before.
pub(crate) fn structural_handler(handler: &ExceptHandler) -> bool {
    let knowledge = crate::names::knowledge::knowledge();
    caught_classes(handler).is_some_and(|names| {
        !names.is_empty() && names.iter().all(|name| knowledge.is_structural_exception(name))
    })
}

/// The dotted names of the classes an `except` clause catches (`(A, B)` is A and B); `None`
/// for a bare `except:` or a type that is not written as names (`except errors():`).
pub(crate) fn caught_classes(handler: &ExceptHandler) -> Option<Vec<String>> {
    let ExceptHandler::ExceptHandler(h) = handler;
    match h.type_.as_deref()? {
        Expr::Tuple(t) => t.elts.iter().map(crate::syntax::expr::dotted).collect(),
        e => crate::syntax::expr::dotted(e).map(|name| vec![name]),
    }
}
