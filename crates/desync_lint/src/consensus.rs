//! Has a rank-local value been agreed on before it decides anything? The standard fixes make
//! every rank see the same value through a collective:
//!
//! ```python
//! stop = torch.tensor([float(val_loss < target)])
//! dist.all_reduce(stop, op=dist.ReduceOp.MAX)    # out-parameter collective on `stop`
//! if stop.item() > 0:
//!     break
//! ```
//!
//! or compute it with a collective (`flag = funcol.all_reduce(...)`) or a helper of the file
//! named for it (`stop = sync_flag(stop)`). The names followed are those the decision reads
//! and the names their values read, `depth` bindings deep.

use desync_python::{StepKind, ValueFeature};

use crate::context::{Context, Via, root_ident};

/// Words in a helper's name that say it makes a value the same on every rank.
const AGREEING_WORDS: &[&str] =
    &["reduce", "allreduce", "broadcast", "gather", "allgather", "sync", "agree", "consensus"];

/// True when `expr`, evaluated at `line` by a decision on line `before`, was made identical
/// across ranks by a collective.
pub(crate) fn agreed(ctx: &Context<'_>, line: u32, expr: &str, before: u32, depth: u32) -> bool {
    let steps = ctx.module.trace_value(line, expr);
    let function = ctx.function_of(line);
    let mut names: Vec<(&str, u32)> = Vec::new();
    for step in steps.iter().filter(|s| s.depth <= depth) {
        if step.features.iter().any(|f| matches!(f, ValueFeature::Collective { .. })) {
            return true;
        }
        let bound = matches!(step.kind, StepKind::Value | StepKind::Augmented);
        if bound && computed_by_agreeing_helper(ctx, step.line) {
            return true;
        }
        if let Some(name) = step.name.as_deref().filter(|_| bound) {
            names.push((name, step.line));
        }
    }
    ctx.sites.iter().any(|site| {
        site.via == Via::Direct
            && site.call.function == function
            && site.line() < before
            && site.call.arguments.iter().chain(site.call.keywords.iter().map(|(_, v)| v)).any(
                |arg| {
                    let root = root_ident(arg);
                    names
                        .iter()
                        .any(|(n, bound)| *n == root && (site.line() > *bound || *bound >= before))
                },
            )
    })
}

fn computed_by_agreeing_helper(ctx: &Context<'_>, line: u32) -> bool {
    ctx.sites.iter().any(|s| {
        s.line() == line
            && match &s.via {
                Via::Helper { .. } => {
                    let lower = s.op.to_ascii_lowercase();
                    AGREEING_WORDS.iter().any(|w| lower.contains(w))
                }
                Via::Direct => true,
                Via::Implicit => false,
            }
    })
}
