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
//! end of the function (or of the loop body, for `continue`). What follows is followed path by
//! path through its `if`s (a `return` or `raise` ends a path there) when it holds no loop
//! around a collective, no jump or collective in a handler and no `return` in a loop;
//! otherwise it is taken as one sequence.
//! The comparison is by what each call issues (helpers included) and on which process group,
//! as a multiset, leaving out collectives on groups the test is not shown to split (their
//! members all go the same way: [`splits_group`]): when every path issues the same
//! collectives, the ranks stay paired whichever way they go. `break` is not paired: the later
//! iterations the others run are not in view as one sequence.
//!
//! A whole `if` on the rank, outside loops, is paired the same way when every path through it
//! (each clause's own exits included) issues the same sequence ([`if_is_balanced`]): then
//! neither the `if` nor any exit inside it can leave a rank waiting. A handler that passes its
//! error on (`except: barrier(); raise`) is a dying rank's path: torchrun stops its peers, so
//! what it issues on the way out is on no path that goes on.

use desync_python::{Conditional, Construct, Dependence, SiteVia};

use crate::context::{Context, Site, splits_group};

/// The most paths followed through what comes after an early exit.
const MAX_PATHS: usize = 64;
/// The deepest nest of `if`s followed path by path (the recursion stays shallow on any input).
const MAX_NEST: usize = 16;
/// The most `if`s a range followed path by path may hold.
const MAX_IFS: usize = 4 * MAX_PATHS;

/// Whether the ranks that leave at the jump on `jump_line` issue, before leaving, the same
/// collectives the ranks that stay issue on every other path to the same point (collectives
/// on groups the test, which depends on `deps`, does not split left out).
pub(super) fn exit_is_balanced(
    ctx: &Context<'_>,
    function: Option<u32>,
    jump_line: u32,
    construct: Construct,
    deps: &[Dependence],
) -> bool {
    let Some((cond, clause)) = innermost_clause(ctx, function, jump_line) else { return false };
    let Some(end) = scope_end(ctx, function, jump_line, construct) else { return false };
    let leaving = leaving_paths(ctx, function, cond.clauses[clause].body.first, jump_line, deps);
    // Leaving with nothing issued is balanced when the ranks that stay leave the same way
    // right after the `if`, issuing nothing first: `if max_n == 0: if rank != 0: return None`
    // then `return []`, before the gather below. (Only that straight form is looked at: an
    // exit issues nothing far more often than not, and following every path after each one
    // was quadratic on a file of thousands of them.)
    if leaving.iter().all(|(l, _)| l.is_empty()) {
        let if_end = cond.clauses.iter().map(|c| c.body.last).max().unwrap_or(cond.line);
        return ctx
            .module
            .exit_after(cond.line, construct == Construct::Continue)
            .is_some_and(|exit| ops(ctx.sites_in(function, if_end + 1, exit), deps).is_empty());
    }
    // A `return` inside a loop leaves the iterations the staying ranks go on to run, which
    // the lines after the `if` do not show.
    if construct == Construct::Return && ctx.innermost_loop(function, jump_line).is_some() {
        return false;
    }
    let staying = staying_paths(ctx, cond, function, end, deps, |i| i != clause);
    leaving.iter().all(|l| staying.iter().all(|p| pair(p, l)))
}

/// Whether two paths that can run together (they decided no steady test two ways) issue the
/// same collectives; paths that cannot are not compared.
fn pair(a: &(Ops, Decided), b: &(Ops, Decided)) -> bool {
    joined(&a.1, &b.1).is_none() || same_issues(&a.0, &b.0)
}

/// What the ranks that leave issue on lines `first..=last` (up to their exit): all of its
/// collectives as one list, or, when an `if` of a steady test there decides which
/// ([`Context::steady_tests`]), each path's, with what it decided.
fn leaving_paths(
    ctx: &Context<'_>,
    function: Option<u32>,
    first: u32,
    last: u32,
    deps: &[Dependence],
) -> Vec<(Ops, Decided)> {
    if !ctx.steady_tests(function).is_empty()
        && let Some(paths) = paths_through(ctx, function, first, last, 0)
        && paths.iter().any(|p| !p.2.is_empty())
    {
        return paths
            .into_iter()
            .map(|(sites, _, decided)| (ops(sites.into_iter(), deps), decided))
            .collect();
    }
    vec![(ops(ctx.sites_in(function, first, last), deps), Vec::new())]
}

/// For an `if` one of whose clauses ends by leaving (its last line is a `return`, or a
/// `continue` in a loop): whether every path through it — a leaving clause up to where it
/// leaves, any other clause plus what follows up to the same end — issues the same collectives
/// (on groups the test, which depends on `deps`, splits).
/// `None` when no clause leaves (the plain clause comparison applies).
pub(super) fn clauses_are_balanced(
    ctx: &Context<'_>,
    cond: &Conditional,
    deps: &[Dependence],
) -> Option<bool> {
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
    let reference =
        leaving_paths(ctx, function, cond.clauses[first_leaving].body.first, jump.line, deps);
    let leaving_agree = (0..cond.clauses.len()).filter(|&i| leaves(i).is_some()).all(|i| {
        let body = &cond.clauses[i].body;
        let paths = leaving_paths(ctx, function, body.first, body.last, deps);
        paths.iter().all(|p| reference.iter().all(|r| pair(p, r)))
    });
    let staying = staying_paths(ctx, cond, function, end, deps, |i| leaves(i).is_none());
    Some(leaving_agree && staying.iter().all(|p| reference.iter().all(|r| pair(p, r))))
}

/// A path's sites, whether it ended (a `return` or `raise`) before the end of its region, and
/// which way it went at each `if` of a steady test ([`Context::steady_tests`]).
type Path<'c, 'a> = (Vec<&'c Site<'a>>, bool, Decided);

/// The steady tests a path decided, each with whether it held there.
type Decided = Vec<(String, bool)>;

/// Whether two parts of a path decided no steady test two ways (`if dp_group is not None:`
/// taken before the early return and not after it is no path any rank runs), and what they
/// decided together.
fn joined(a: &Decided, b: &Decided) -> Option<Decided> {
    if a.iter().any(|(t, h)| b.iter().any(|(u, k)| t == u && h != k)) {
        return None;
    }
    let mut out = a.clone();
    out.extend(b.iter().filter(|d| !a.contains(d)).cloned());
    Some(out)
}

/// What a path issues, by op and process group ([`ops`]).
type Ops = Vec<(String, Option<String>)>;

/// The sorted ops of the paths that stay: each clause `keep` selects (plus a missing `else`),
/// followed by what comes after the `if` up to `end`, path by path where that can be followed.
fn staying_paths(
    ctx: &Context<'_>,
    cond: &Conditional,
    function: Option<u32>,
    end: u32,
    deps: &[Dependence],
    keep: impl Fn(usize) -> bool,
) -> Vec<(Ops, Decided)> {
    let if_end = cond.clauses.iter().map(|c| c.body.last).max().unwrap_or(cond.line);
    let missing_else = !cond.has_else();
    if let Some(paths) = followed_paths(ctx, cond, function, end, deps, &keep, true) {
        return paths;
    }
    // Not followed path by path: each clause, then everything after the `if` as one sequence.
    let clauses: Vec<(u32, u32)> = (0..cond.clauses.len())
        .filter(|&i| keep(i))
        .map(|i| (cond.clauses[i].body.first, cond.clauses[i].body.last))
        .collect();
    let after: Vec<&Site<'_>> = ctx.sites_in(function, if_end + 1, end).collect();
    let mut paths: Vec<(Ops, Decided)> = clauses
        .iter()
        .map(|&(first, last)| {
            let sites = ctx.sites_in(function, first, last).chain(after.iter().copied());
            (ops(sites, deps), Vec::new())
        })
        .collect();
    if missing_else {
        paths.push((ops(after.iter().copied(), deps), Vec::new()));
    }
    paths
}

/// The ops of every path through the clauses `keep` selects (plus a missing `else`), each
/// followed by what comes after the `if` up to `end` unless a `return` or `raise` ended it
/// first, sorted or in the order issued; `None` when a part cannot be followed path by path
/// ([`paths_through`]).
fn followed_paths(
    ctx: &Context<'_>,
    cond: &Conditional,
    function: Option<u32>,
    end: u32,
    deps: &[Dependence],
    keep: &impl Fn(usize) -> bool,
    sorted: bool,
) -> Option<Vec<(Ops, Decided)>> {
    let listed = |sites: &mut dyn Iterator<Item = &Site<'_>>| {
        if sorted { ops(sites, deps) } else { ops_in_order(sites, deps) }
    };
    let if_end = cond.clauses.iter().map(|c| c.body.last).max().unwrap_or(cond.line);
    let after = paths_through(ctx, function, if_end + 1, end, 0)?;
    let mut out = Vec::new();
    let mut starts: Vec<Path<'_, '_>> = Vec::new();
    for clause in (0..cond.clauses.len()).filter(|&i| keep(i)).map(|i| &cond.clauses[i]) {
        starts.extend(paths_through(ctx, function, clause.body.first, clause.body.last, 0)?);
    }
    if !cond.has_else() {
        starts.push((Vec::new(), false, Vec::new()));
    }
    for (start, ended, decided) in starts {
        if ended {
            out.push((listed(&mut start.into_iter()), decided));
            continue;
        }
        for (rest, _, later) in &after {
            let Some(both) = joined(&decided, later) else { continue };
            out.push((listed(&mut start.iter().chain(rest.iter()).copied()), both));
        }
        if out.len() > MAX_PATHS {
            return None;
        }
    }
    Some(out)
}

/// Whether every path through `cond`, outside any loop, issues the same collectives (on groups
/// a test that depends on `deps` splits): each clause's paths, ended where a `return` or
/// `raise` ends them, the others (and a missing `else`) continued to the end of the function.
/// Then no rank waits for another whichever clause, and whichever exit inside it, it takes:
///
/// ```python
/// if rank == 0:
///     if config is None:
///         barrier()       # rank 0 leaves through a barrier of its own...
///         return
///     write(config)
/// barrier()               # ...which pairs with the others' barrier here
/// ```
///
/// In a loop the later iterations are not one path, so an `if` there is not judged so.
pub(super) fn if_is_balanced(ctx: &Context<'_>, cond: &Conditional, deps: &[Dependence]) -> bool {
    let function = cond.function;
    if ctx.innermost_loop(function, cond.line).is_some() {
        return false;
    }
    let Some(end) = function.and_then(|f| ctx.function(f)).map(|f| f.end_line) else {
        return false;
    };
    // The same collectives in the same order (another order is DSY004's).
    followed_paths(ctx, cond, function, end, deps, &|_| true, false).is_some_and(|paths| {
        paths.iter().all(|a| paths.iter().all(|b| joined(&a.1, &b.1).is_none() || a.0 == b.0))
    })
}

/// Whether `line` of `function` sits in a clause of an `if` whose test depends on the rank id
/// and every path through which issues the same collectives ([`if_is_balanced`]): however the
/// ranks inside it decide, none waits for another.
pub(super) fn inside_balanced_rank_split(
    ctx: &Context<'_>,
    function: Option<u32>,
    line: u32,
) -> bool {
    ctx.enclosing_ifs(function, line).any(|(c, _)| {
        // The dependence is asked last: it follows the data, the rest reads the outline.
        let rank_test = c.clauses.iter().find_map(|cl| {
            let deps = ctx.dependence(cl.test_line?, cl.test.as_deref()?);
            crate::context::has_rank_id(&deps).then_some(deps)
        });
        rank_test.is_some_and(|deps| if_is_balanced(ctx, c, &deps))
    })
}

/// The paths through lines `first..=last` of `function`: the sites each issues, branching at
/// every `if` there (one path per clause, one more when it has no `else`), a `return` or
/// `raise` ending a path. `None` when a loop there holds a collective, a jump or a collective
/// sits in an `except` there, a `return`/`raise` in a loop body, or there are more than
/// [`MAX_PATHS`] paths or `if`s nested deeper than [`MAX_NEST`].
fn paths_through<'c, 'a>(
    ctx: &'c Context<'a>,
    function: Option<u32>,
    first: u32,
    last: u32,
    nest: usize,
) -> Option<Vec<Path<'c, 'a>>> {
    if nest > MAX_NEST {
        return None;
    }
    if first > last {
        return Some(vec![(Vec::new(), false, Vec::new())]);
    }
    // Every `if` at least doubles the paths that go on, so a range with many is not followed:
    // asking is then bounded by the cap, not by the function's size.
    let conditionals = ctx.conditionals_in(first, last);
    if conditionals.len() > MAX_IFS {
        return None;
    }
    let within = |line: u32| (first..=last).contains(&line);
    let jumps = ctx.jumps_in(first, last);
    let loops_with_sites = ctx.outline.loops.iter().any(|l| {
        l.function == function
            && within(l.line)
            && ctx.sites_in(function, l.body.first, l.body.last).next().is_some()
    });
    // A handler runs only on the ranks that raised: its jumps and collectives are not on the
    // straight path. One that passes the error on (`barrier(); raise`) ends the rank's path
    // loudly (torchrun stops its peers), so its lines are left out.
    let passed_on = |line: u32| ctx.in_dying_handler(function, line);
    let jump_in_handler = ctx.outline.tries.iter().any(|t| {
        t.function == function
            && within(t.line)
            && t.handlers.iter().filter(|h| !h.propagates).any(|h| {
                ctx.sites_in(function, h.body.first, h.body.last).next().is_some()
                    || ctx
                        .jumps_in(h.body.first, h.body.last)
                        .iter()
                        .any(|j| j.function == function)
            })
    });
    // A `return` inside a loop may or may not run.
    let jump_in_loop = jumps.iter().any(|j| {
        j.function == function
            && matches!(j.construct, Construct::Return | Construct::Raise)
            && ctx.innermost_loop(function, j.line).is_some()
    });
    if loops_with_sites || jump_in_handler || jump_in_loop {
        return None;
    }
    // The `if`s at the top of the range, not inside a clause of another `if` in it: in source
    // order each nested `if` comes after the one around it and before its last line.
    let mut ifs: Vec<&Conditional> = Vec::new();
    let mut covered_to = 0;
    for c in conditionals.iter().filter(|c| c.function == function && !passed_on(c.line)) {
        if c.line > covered_to {
            covered_to = c.last_line();
            ifs.push(c);
        }
    }
    let mut paths: Vec<Path<'c, 'a>> = vec![(Vec::new(), false, Vec::new())];
    let mut line = first;
    let mut ifs = ifs.into_iter().peekable();
    while line <= last {
        let next_if = ifs.peek().map_or(last + 1, |c| c.line);
        // Straight-line code up to the next `if`: its sites, then a `return`/`raise` ends it.
        let stop = ctx.jumps_in(line, next_if.saturating_sub(1)).iter().find(|j| {
            j.function == function
                && matches!(j.construct, Construct::Return | Construct::Raise)
                && !passed_on(j.line)
        });
        let upto = stop.map_or(next_if.saturating_sub(1).min(last), |j| j.line);
        let straight: Vec<&Site<'_>> =
            ctx.sites_in(function, line, upto).filter(|s| !passed_on(s.line())).collect();
        for (sites, ended, _) in &mut paths {
            if !*ended {
                sites.extend(straight.iter().copied());
                *ended = stop.is_some();
            }
        }
        if stop.is_some() || next_if > last {
            break;
        }
        let Some(c) = ifs.next() else { break };
        let if_last = c.clauses.iter().map(|cl| cl.body.last).max().unwrap_or(c.line);
        // An `if` of a steady test goes the same way on every path that meets it again.
        let steady = c.clauses[0]
            .test
            .as_ref()
            .filter(|t| ctx.steady_tests(function).contains(t))
            .filter(|_| c.clauses.len() == 1 || (c.clauses.len() == 2 && c.has_else()));
        let mut branches: Vec<Path<'c, 'a>> = Vec::new();
        for (i, cl) in c.clauses.iter().enumerate() {
            for (sites, ended, mut decided) in
                paths_through(ctx, function, cl.body.first, cl.body.last, nest + 1)?
            {
                if let Some(test) = steady {
                    // A path that decided the test the other way inside is no path.
                    let Some(both) = joined(&decided, &vec![(test.clone(), i == 0)]) else {
                        continue;
                    };
                    decided = both;
                }
                branches.push((sites, ended, decided));
            }
        }
        if !c.has_else() {
            let decided = steady.map(|t| vec![(t.clone(), false)]).unwrap_or_default();
            branches.push((Vec::new(), false, decided));
        }
        // A test may call a helper that issues collectives: the `if` line's are on every
        // branch; an `elif`'s only on some, which is not followed.
        let header: Vec<&Site<'_>> = ctx.sites_in(function, c.line, c.line).collect();
        if c.clauses
            .iter()
            .skip(1)
            .any(|cl| ctx.sites_in(function, cl.line, cl.line).next().is_some())
        {
            return None;
        }
        let mut next = Vec::new();
        for (sites, ended, decided) in paths {
            if ended {
                next.push((sites, true, decided));
                continue;
            }
            for (branch, branch_ended, also) in &branches {
                let Some(both) = joined(&decided, also) else { continue };
                let mut p = sites.clone();
                p.extend(header.iter().copied());
                p.extend(branch.iter().copied());
                next.push((p, *branch_ended, both));
            }
        }
        if next.len() > MAX_PATHS {
            return None;
        }
        paths = next;
        line = if_last + 1;
    }
    Some(paths)
}

/// The innermost `if` of `function` with a clause holding `line`, and that clause's index.
pub(super) fn innermost_clause<'c>(
    ctx: &'c Context<'_>,
    function: Option<u32>,
    line: u32,
) -> Option<(&'c Conditional, usize)> {
    ctx.enclosing_ifs(function, line).next()
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

/// What a sequence of sites issues and on which process group, in the order issued
/// (collectives on groups a test that depends on `deps` does not split left out, as in [`ops`]).
fn ops_in_order<'s, 'a: 's>(sites: impl Iterator<Item = &'s Site<'a>>, deps: &[Dependence]) -> Ops {
    sites
        .filter(|s| !s.is_point_to_point() && splits_group(deps, s))
        .map(|s| (s.op.clone(), s.group().map(str::to_owned)))
        .collect()
}

/// What a sequence of sites issues and on which process group (as written), sorted;
/// point-to-point calls left out, as everywhere, and collectives on groups a test that depends
/// on `deps` does not split. The same op on another group does not pair:
/// `all_reduce(flag, group=metrics)` on the leaving ranks and the gradient `all_reduce` on
/// the others is a wait cycle across groups.
/// A receive loop ([`SiteVia::Helper`]'s `serves`) is listed as [`SERVES`] and each op it
/// issues: it pairs with the source's collectives of those kinds ([`same_issues`]).
fn ops<'s, 'a: 's>(sites: impl Iterator<Item = &'s Site<'a>>, deps: &[Dependence]) -> Ops {
    let mut v: Ops = Vec::new();
    for s in sites.filter(|s| !s.is_point_to_point() && splits_group(deps, s)) {
        let group = s.group().map(str::to_owned);
        if matches!(s.site.via, SiteVia::Helper { serves: true, .. }) {
            v.extend(s.site.ops.iter().map(|op| (format!("{SERVES}{op}"), group.clone())));
        } else {
            v.push((s.op.clone(), group));
        }
    }
    v.sort_unstable();
    v.dedup_by(|a, b| a.0.starts_with(SERVES) && a == b);
    v
}

/// The mark of what a receive loop issues in [`Ops`].
const SERVES: &str = "serves:";

/// Whether two paths issue the same collectives. A receive loop on either path issues what the
/// source's messages tell it to, as many times as the source sends (a command loop: the
/// workers sit in `serve()` while rank 0 scatters commands from wherever it runs, then a stop
/// message), so the collectives of the kinds it serves, on its group, pair with it whatever
/// their number.
fn same_issues(a: &Ops, b: &Ops) -> bool {
    let served: Vec<(&str, &Option<String>)> = a
        .iter()
        .chain(b)
        .filter_map(|(op, group)| op.strip_prefix(SERVES).map(|op| (op, group)))
        .collect();
    if served.is_empty() {
        return a == b;
    }
    let rest = |ops: &Ops| -> Ops {
        ops.iter()
            .filter(|(op, group)| {
                !op.starts_with(SERVES)
                    && !op.split(',').all(|atom| served.contains(&(atom, group)))
            })
            .cloned()
            .collect()
    };
    rest(a) == rest(b)
}
