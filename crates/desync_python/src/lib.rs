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
//! # Layers
//!
//! Each layer is a folder whose opening comment says what it knows; a module reads only its
//! own layer and the ones below (checked by `layers_tests.rs`, which fails on an upward import
//! or a cycle). The bridge (`desync_core`) and the linter (`desync_lint`) ask layers 3 to 5
//! through the re-exports below and hold no analysis of their own.
//!
//! ```text
//!   desync_core::bridge        desync_lint
//!            \                    /
//!   5 control   branch/ outline/ placement exits hooks flags   which paths skip which sites
//!   4 sites     call probe setup callers facts metadata raises  the collectives a call issues
//!   3 values    Analysis, value (Eval), resolve, summary, origin, classify, trace
//!                                                    uniform or rank-local, and the chain why
//!   2 names     bindings, project, knowledge (frameworks.toml)   what a name or callee is
//!   1 syntax    module, tree, expr, nesting, types, patterns     the parsed file
//! ```
//!
//! Where new work goes:
//! - a new fact about values (a call that leaves its result agreed, a new source of
//!   rank-local data, "broadcast from rank 0 is uniform afterwards"): a row of the knowledge
//!   table when it is about a named API, else `values/` (`value.rs` evaluates expressions,
//!   `summary.rs` what functions return, `Deps`/`Reason` in `values/mod.rs` the chain);
//! - a new framework API (a collective, a wrapper, a hook, a stop flag): a row of
//!   `names/knowledge/frameworks.toml`, read through [`knowledge`]; code only when the table
//!   lacks the column, in the layer that reads it;
//! - a new control-flow construct (a jump, a handler shape, a loop form): `control/branch/`
//!   (which construct sends ranks apart) and `control/outline/` (the linter's view), over the
//!   statement navigation of `syntax/tree.rs`.
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

mod control;
pub mod names;
mod sites;
mod syntax;
mod values;

#[cfg(test)]
mod layers_tests;
#[cfg(test)]
mod robustness;

pub use control::branch::GuardFinder;
pub use control::exits::ExitBefore;
pub use control::flags::{AttributeWrite, FlagWrite};
pub use control::hooks::HookExit;
pub use control::outline::{
    Call, Clause, Conditional, Conjunct, Handler, Import, JumpStmt, LineRange, Loop, Membership,
    Outline, TryBlock,
};
pub use control::placement::{DecisionSite, InsertionPoint, LoopSite};
pub use control::reducer::{ForwardSkip, ReducerWrap};
pub use names::knowledge;
pub use names::project::{FileProject, MAX_FILE_BYTES, Project};
pub use sites::count::CountOrigin;
pub use sites::probe::{FileProbe, file_probe_spellings};
pub use sites::{
    Argument, ArgumentElsewhere, CollectiveSite, Collectives, RankOnly, SetupBlock, SetupCall,
    SiteVia,
};
pub use syntax::expr::has_word;
pub use syntax::module::Module;
pub use syntax::nesting::{MAX_NESTING, MAX_TOKENS};
pub use syntax::patterns;
pub use syntax::types::{
    ArgOrigin, Branch, CallOrigin, CallSite, Construct, Dependence, DependenceKind, Function, Jump,
};
pub use values::classify::{ClassifyOptions, classify_expression, classify_expression_with};
pub use values::trace::{StepKind, ValueFeature, ValueStep};
pub use values::{
    Analysis, Carried, Finding, OriginFrame, PointToPointUse, ValueOrigin, grid_axes, grid_group,
    merge_groups,
};
