//! Pairing across an early exit. Real code often lets some ranks leave early after issuing
//! what the others issue later:
//!
//! ```python
//! if rank != 0:
//!     dist.barrier()      # non-savers wait here...
//!     return
//! save(model)
//! dist.barrier()          # ...for the saver, which arrives after writing
//! ```
//!
//! Every rank issues one barrier, so no rank waits forever. A clause that leaves (`return`, or
//! `continue` inside a loop) is compared with the paths that stay: what the clause issues up to
//! where it leaves, against what each other clause issues plus what follows the `if` up to the
//! end of the function (or of the loop body, for `continue`). The comparison is by what each
//! call issues (helpers included) and on which process group, as a multiset: when every path
//! issues the same collectives, the ranks stay paired whichever way they go. `break` is not
//! paired: the later iterations the others run are not in view as one sequence.

use desync_python::{Conditional, Construct};

use crate::context::{Context, Site};

/// Whether the ranks that leave at the jump on `jump_line` issue, before leaving, the same
/// collectives the ranks that stay issue on every other path to the same point.
pub(super) fn exit_is_balanced(
    ctx: &Context<'_>,
    function: Option<u32>,
    jump_line: u32,
    construct: Construct,
) -> bool {
    let Some((cond, clause)) = innermost_clause(ctx, function, jump_line) else { return false };
    let Some(end) = scope_end(ctx, function, jump_line, construct) else { return false };
    let leaving = ops(ctx.sites_in(function, cond.clauses[clause].body.first, jump_line));
    if leaving.is_empty() {
        return false;
    }
    staying_paths(ctx, cond, function, end, |i| i != clause).iter().all(|p| *p == leaving)
}

/// For an `if` one of whose clauses ends by leaving (its last line is a `return`, or a
/// `continue` in a loop): whether every path through it — a leaving clause up to where it
/// leaves, any other clause plus what follows up to the same end — issues the same collectives.
/// `None` when no clause leaves (the plain clause comparison applies).
pub(super) fn clauses_are_balanced(ctx: &Context<'_>, cond: &Conditional) -> Option<bool> {
    let function = cond.function;
    let leaves = |i: usize| -> Option<&desync_python::JumpStmt> {
        let body = &cond.clauses[i].body;
        ctx.outline.jumps.iter().find(|j| {
            j.function == function
                && j.line == body.last
                && matches!(j.construct, Construct::Return | Construct::Continue)
        })
    };
    let (first_leaving, jump) = (0..cond.clauses.len()).find_map(|i| leaves(i).map(|j| (i, j)))?;
    let end = scope_end(ctx, function, jump.line, jump.construct)?;
    let reference = ops(ctx.sites_in(function, cond.clauses[first_leaving].body.first, jump.line));
    let leaving_agree = (0..cond.clauses.len()).filter(|&i| leaves(i).is_some()).all(|i| {
        let body = &cond.clauses[i].body;
        ops(ctx.sites_in(function, body.first, body.last)) == reference
    });
    let staying = staying_paths(ctx, cond, function, end, |i| leaves(i).is_none());
    Some(leaving_agree && staying.iter().all(|p| *p == reference))
}

/// The sorted ops of the paths that stay: each clause `keep` selects (plus a missing `else`),
/// followed by what comes after the `if` up to `end`.
fn staying_paths(
    ctx: &Context<'_>,
    cond: &Conditional,
    function: Option<u32>,
    end: u32,
    keep: impl Fn(usize) -> bool,
) -> Vec<Vec<(String, Option<String>)>> {
    let if_end = cond.clauses.iter().map(|c| c.body.last).max().unwrap_or(cond.line);
    let after: Vec<&Site<'_>> = ctx.sites_in(function, if_end + 1, end).collect();
    let mut paths: Vec<Vec<(String, Option<String>)>> = (0..cond.clauses.len())
        .filter(|&i| keep(i))
        .map(|i| {
            let body = &cond.clauses[i].body;
            ops(ctx.sites_in(function, body.first, body.last).chain(after.iter().copied()))
        })
        .collect();
    if !cond.has_else() {
        paths.push(ops(after.iter().copied()));
    }
    paths
}

/// The innermost `if` of `function` with a clause holding `line`, and that clause's index.
pub(super) fn innermost_clause<'c>(
    ctx: &'c Context<'_>,
    function: Option<u32>,
    line: u32,
) -> Option<(&'c Conditional, usize)> {
    ctx.outline
        .conditionals
        .iter()
        .filter(|c| c.function == function)
        .filter_map(|c| {
            let i =
                c.clauses.iter().position(|cl| (cl.body.first..=cl.body.last).contains(&line))?;
            Some((c, i))
        })
        .max_by_key(|(c, _)| c.line)
}

/// The last line the jump skips to the end of: the function's for `return`, the innermost
/// loop body's for `continue`.
fn scope_end(
    ctx: &Context<'_>,
    function: Option<u32>,
    jump_line: u32,
    construct: Construct,
) -> Option<u32> {
    match construct {
        Construct::Return => ctx.function(function?).map(|f| f.end_line),
        Construct::Continue => ctx.innermost_loop(function, jump_line).map(|l| l.body.last),
        _ => None,
    }
}

/// What a sequence of sites issues and on which process group (as written), sorted;
/// point-to-point calls left out, as everywhere. The same op on another group does not pair:
/// `all_reduce(flag, group=metrics)` on the leaving ranks and the gradient `all_reduce` on
/// the others is a wait cycle across groups.
fn ops<'s, 'a: 's>(sites: impl Iterator<Item = &'s Site<'a>>) -> Vec<(String, Option<String>)> {
    let mut v: Vec<(String, Option<String>)> = sites
        .filter(|s| !s.is_point_to_point())
        .map(|s| (s.op.clone(), s.group().map(str::to_owned)))
        .collect();
    v.sort_unstable();
    v
}
