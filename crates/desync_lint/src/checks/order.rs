//! DSY004 on loops: a collective issued for each element of a list (of process groups, of
//! reductions) whose order some ranks change under a rank-dependent condition — the
//! `reductions.reverse()` of `tests/scenarios/pg_order`. The finding sits on the deciding `if`
//! that [`desync_python::Module::find_order_branch`] names.

use std::collections::HashSet;

use super::{Raw, decision_indirect, explain, short};
use crate::context::Context;
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    let mut done = HashSet::new();
    for site in &ctx.sites {
        let in_loop =
            ctx.outline.loops.iter().any(|l| {
                !l.is_while && l.function == site.function() && l.body.contains(site.line())
            });
        if !in_loop {
            continue;
        }
        let Some(branch) = ctx.module.find_order_branch_with(ctx.analysis(), site.line()) else {
            continue;
        };
        let (Some(test), Some(test_line)) = (&branch.condition, branch.condition_line) else {
            continue;
        };
        if !done.insert(branch.line) {
            continue;
        }
        let deps = ctx.dependence(test_line, test);
        if deps.is_empty() {
            continue;
        }
        out.push(Raw {
            rule: Rule::RankDependentOrder,
            line: branch.line,
            column: None,
            keyword: Some(branch.construct.as_str()),
            message: format!(
                "`{}` reorders what the loop around {} walks, on the ranks where it holds: \
                 they issue its collectives (or use its process groups) in another order than \
                 their peers and the groups deadlock; the test depends on {}",
                short(test),
                site.describe(),
                explain(&deps),
            ),
            indirect: decision_indirect(&deps),
        });
    }
    out
}
