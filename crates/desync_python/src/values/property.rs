//! Properties of the project's own classes: `self.is_main`, where the class defines
//! `@property def is_main(self): return self.accelerator.is_main_process`, reads what that
//! method returns, as `self.is_main()` would.

use ruff_python_ast::{Expr, StmtFunctionDef};

use super::Deps;
use super::resolve::{FnRef, def_at};
use super::value::Eval;
use crate::syntax::module::Module;

impl Eval<'_, '_> {
    /// What reading the property `f` gives, when `f` is a `@property` (or
    /// `@functools.cached_property`) method; `None` for other functions.
    pub(crate) fn property_value(&mut self, f: &FnRef) -> Option<Deps> {
        let module: &Module = f.module.as_deref().unwrap_or(self.module);
        if !def_at(module, f.def).is_some_and(is_property) {
            return None;
        }
        let summary = self.summary(f)?;
        let mut deps = summary.returns.whole.clone();
        // The receiver is the object the attribute is read on, not a value the caller passes.
        if let Some(receiver) = summary.parameters.first() {
            deps.params.retain(|p| p != receiver);
        }
        Some(deps)
    }
}

/// `@property`, `@cached_property`, `@functools.cached_property` (Python's builtins and
/// standard library).
fn is_property(def: &StmtFunctionDef) -> bool {
    def.decorator_list.iter().any(|d| match &d.expression {
        Expr::Name(n) => matches!(n.id.as_str(), "property" | "cached_property"),
        Expr::Attribute(a) => a.attr.id.as_str() == "cached_property",
        _ => false,
    })
}
