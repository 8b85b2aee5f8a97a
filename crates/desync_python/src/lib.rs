//! Python source understanding for desync's code bridge and linter.
//!
//! [`Module::parse`] reads a training script with error recovery; the bridge then asks which
//! function holds a frame's line ([`Module::function_at`]), which control-flow construct sends
//! two groups of ranks different ways ([`Module::find_branch`]), and where a collective's
//! arguments come from ([`Module::explain_call`]). Why a condition or value can differ across
//! ranks is shown by following the data ([`Analysis`], in `flow`): values flow from the sources
//! the framework table names ([`knowledge`]: `dist.get_rank()`, `trainer.is_global_zero`, a data
//! loader's batches, clocks, host reads, random draws, caught exceptions) through assignments,
//! the project's own functions and `self` attributes, never from how a variable is spelled.
//!
//! The parser is Ruff's (`ruff_python_parser`, pinned); none of its types appear in this API.
//!
//! ```
//! use desync_python::{Construct, DependenceKind, Module};
//!
//! let train = "\
//! from torch.utils.data import DataLoader
//! def train(model, dataset):
//!     for batch in DataLoader(dataset):
//!         dist.all_reduce(torch.ones(1))
//!         loss = model(batch)
//!         if not torch.isfinite(loss):
//!             continue
//!         loss.backward()
//! ";
//! let module = Module::parse(train);
//! // Some ranks wait in `loss.backward()` (line 8), the others are back at line 4.
//! let branch = module.find_branch(8, Some(4)).unwrap();
//! assert_eq!(branch.construct, Construct::Continue);
//! assert_eq!(branch.condition.as_deref(), Some("not torch.isfinite(loss)"));
//! assert_eq!(branch.dependence[0].kind, DependenceKind::LocalData);
//! assert!(branch.dependence[0].evidence.starts_with("`loss` = `model(batch)` (line 5)"));
//! ```
//!
//! Limits: flow is approximated by source order (a use sees the latest binding before it),
//! calls are followed into the project's own functions a few levels deep, library calls the
//! table does not name are taken as functions of their arguments, and a parameter whose
//! callers are not in view is reported as `Unknown` with its name, for the caller to follow.

mod branch;
mod call;
mod code_objects;
mod dependence;
mod expr;
mod flow;
pub mod knowledge;
mod module;
mod nesting;
mod outline;
mod placement;
mod tree;
mod types;

#[cfg(test)]
mod robustness;

pub use branch::GuardFinder;
pub use dependence::patterns;
pub use dependence::trace::{StepKind, ValueFeature, ValueStep};
pub use dependence::{ClassifyOptions, classify_expression, classify_expression_with};
pub use expr::has_word;
pub use flow::{
    Analysis, Argument, ArgumentElsewhere, AttributeWrite, Carried, CollectiveSite, Collectives,
    ExitBefore, FileProbe, FileProject, Finding, FlagWrite, HookExit, MAX_FILE_BYTES, OriginFrame,
    Project, RankOnly, SetupBlock, SetupCall, SiteVia, ValueOrigin, file_probe_spellings,
    grid_axes, grid_group, merge_groups,
};
pub use module::Module;
pub use nesting::{MAX_NESTING, MAX_TOKENS};
pub use outline::{
    Call, Clause, Conditional, Conjunct, Handler, Import, JumpStmt, LineRange, Loop, Membership,
    Outline, TryBlock,
};
pub use placement::{DecisionSite, InsertionPoint, LoopSite};
pub use types::{
    ArgOrigin, Branch, CallOrigin, CallSite, Construct, Dependence, DependenceKind, Function, Jump,
};
