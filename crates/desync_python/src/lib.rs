//! Python source understanding for desync's code bridge and linter.
//!
//! [`Module::parse`] reads a training script with error recovery; the bridge then asks which
//! function holds a frame's line ([`Module::function_at`]), which control-flow construct sends
//! two groups of ranks different ways ([`Module::find_branch`]), and where a collective's
//! arguments come from ([`Module::explain_call`]). Conditions and arguments are classified by
//! why they can differ across ranks ([`classify_expression`], lists in [`patterns`]).
//!
//! The parser is Ruff's (`ruff_python_parser`, pinned); none of its types appear in this API.
//!
//! ```
//! use desync_python::{Construct, DependenceKind, Module};
//!
//! let train = "\
//! def train(model, loader):
//!     for batch in loader:
//!         dist.all_reduce(torch.ones(1))
//!         loss = model(batch)
//!         if not torch.isfinite(loss):
//!             continue
//!         loss.backward()
//! ";
//! let module = Module::parse(train);
//! // Some ranks wait in `loss.backward()` (line 7), the others are back at line 3.
//! let branch = module.find_branch(7, Some(3)).unwrap();
//! assert_eq!(branch.construct, Construct::Continue);
//! assert_eq!(branch.condition.as_deref(), Some("not torch.isfinite(loss)"));
//! assert_eq!(branch.dependence[0].kind, DependenceKind::LocalData);
//! assert_eq!(branch.dependence[0].evidence, "`loss` (assigned from `model(batch)` at line 4)");
//! ```
//!
//! Limits: flow is approximated by source order (no data-flow graph), names are followed a few
//! assignments deep within one function (plus module globals), and calls into other functions
//! are not followed; a condition the analysis cannot see through is reported as `Unknown`.

mod branch;
mod call;
mod dependence;
mod expr;
mod module;
mod outline;
mod tree;
mod types;

#[cfg(test)]
mod robustness;

pub use dependence::patterns;
pub use dependence::trace::{StepKind, ValueFeature, ValueStep};
pub use dependence::{ClassifyOptions, classify_expression, classify_expression_with};
pub use module::Module;
pub use outline::{Call, Clause, Conditional, Handler, Import, LineRange, Loop, Outline, TryBlock};
pub use types::{
    ArgOrigin, Branch, CallOrigin, CallSite, Construct, Dependence, DependenceKind, Function, Jump,
};
