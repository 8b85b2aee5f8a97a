//! DSY002 on `for` loops whose number of iterations depends on the rank id: the ranks with
//! fewer items leave the loop while their peers issue the body's collectives again
//! (`for batch in batches(torch.split(ids, ceil(n / world))[rank])`: the last shard is shorter,
//! and DDP's gradient `all_reduce` in the body waits for the ranks that are already done).
//!
//! Only the rank id counts here, and the host alone as indirect evidence (a loader over a
//! folder's listing: each host may have staged other files, a shared file system gives every
//! rank the same; [`super::decision_indirect`]): a loader over each rank's own data has a
//! number of batches the code at the loop does not show (a `DistributedSampler` makes it the
//! same everywhere).
//! Point-to-point calls are left out (each rank has its own list of peers), and so are
//! collectives on a group the rank chooses (its members may all have the same length), and
//! loops under a context manager of the table that tolerates uneven inputs
//! (`with model.join():`).

use desync_python::DependenceKind;

use super::{Raw, explain, indirect, short};
use crate::context::{Context, Site, has_rank_id, splits_group};
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for lp in ctx.outline.loops.iter().filter(|l| !l.is_while) {
        // Point-to-point calls in a loop are each rank's own list of peers, uneven by design.
        let body = || {
            ctx.sites_in(lp.function, lp.body.first, lp.body.last)
                .filter(|s| !s.is_point_to_point())
        };
        if body().next().is_none() {
            continue;
        }
        let deps = ctx.length_dependence(lp.header_line, &lp.header);
        let host_only = !has_rank_id(&deps)
            && !deps.is_empty()
            && deps.iter().all(|d| d.kind == DependenceKind::Environment);
        if !has_rank_id(&deps) && !host_only {
            continue;
        }
        // A group chosen by the rank (`my_dp = dp[0] if first else dp[1]`) holds the ranks
        // that chose it, which what decides the length may decide too: not shown.
        let chosen_per_rank =
            |s: &&Site<'_>| s.group().is_some_and(|g| has_rank_id(&ctx.dependence(s.line(), g)));
        let Some(site) = body().find(|s| splits_group(&deps, s) && !chosen_per_rank(s)) else {
            continue;
        };
        // Under `with model.join():` the ranks that run out shadow their peers' collectives.
        if ctx.analysis().inside_join(ctx.module, lp.line) {
            continue;
        }
        // Only the rank id (or the host alone) decides here: the other reasons are not shown.
        let shown = if host_only { DependenceKind::Environment } else { DependenceKind::RankId };
        let rank: Vec<_> = deps.into_iter().filter(|d| d.kind == shown).collect();
        out.push(Raw {
            rule: Rule::LocalEarlyExit,
            line: lp.line,
            column: Some(lp.column),
            keyword: Some("for"),
            message: format!(
                "the number of items of `{}` can differ across ranks ({}): the ranks with fewer \
                 leave the loop while their peers issue {} again; give every rank as many \
                 items (cut the list to a multiple of the world size, pad it, or shard with a \
                 DistributedSampler)",
                short(&lp.header),
                explain(&rank),
                site.describe(),
            ),
            indirect: if host_only { super::decision_indirect(&rank) } else { indirect(&rank) },
        });
    }
    out
}
