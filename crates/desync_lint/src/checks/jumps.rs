//! DSY002 (and DSY001 for the rank id): a `continue`/`break`/`return` under an `if`
//! whose test is rank-local, in a loop, that makes some ranks skip a collective their peers
//! issue — the rest of this iteration (`continue`), every later iteration (`break`), or the
//! rest of the function; outside a loop, a `return` only where the test is shown to read what
//! the rank computed from its own data, clock or random draws. Also a `while` loop whose test
//! is rank-local around a collective: ranks run different numbers of iterations.
//!
//! Quiet when the decision was agreed on first: the flow analysis leaves a value that went
//! through an agreeing collective (directly or in a helper) with no dependence. A jump that only
//! depends on the rank id is DSY001: the collective is reachable only on some ranks.
//! Jumps guarded by an `except` are DSY003's.

use std::collections::HashSet;

use desync_python::{Branch, Construct, DependenceKind};

use super::{Raw, decision_indirect, explain, short};
use crate::context::{Context, Site, splits_group};
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    let mut done = HashSet::new();
    let mut finder = desync_python::GuardFinder::new(ctx.module);
    // Point-to-point calls are rank-asymmetric by design (`if dst == rank: continue`); what a
    // rank issues on its way to dying (`except: barrier(); raise`) is skipped by nobody alive.
    let skippable =
        |s: &&Site<'_>| !s.is_point_to_point() && !ctx.in_dying_handler(s.function(), s.line());
    for site in ctx.sites.iter().filter(skippable) {
        // A jump judged for an earlier collective is not described again.
        let guards =
            finder.guards_where(ctx.analysis(), site.line(), &mut |line| !done.contains(&line));
        for guard in guards {
            if !done.insert(guard.line) {
                continue;
            }
            match judge(ctx, site, &guard) {
                Judged::Quiet => {}
                // Another collective under the same jump may still be split.
                Judged::NextSite => {
                    done.remove(&guard.line);
                }
                Judged::Report(raw) => out.extend(with_uniform_parts_known(ctx, site, &guard, raw)),
            }
        }
    }
    out.extend(while_loops(ctx));
    out
}

/// What one early exit does to one collective after it.
enum Judged {
    Quiet,
    /// The exit leaves this collective's group whole; a later one may be split.
    NextSite,
    Report(Raw),
}

/// Whether the jump `guard` makes some ranks skip `site` while their peers issue it.
fn judge(ctx: &Context<'_>, site: &Site<'_>, guard: &Branch) -> Judged {
    // A `raise` is left out: the rank dies loudly and torchrun stops its peers.
    let keyword = match guard.construct {
        Construct::Continue => "continue",
        Construct::Break => "break",
        Construct::Return => "return",
        _ => return Judged::Quiet,
    };
    // `return _communicate_result(False, pg)`: the early exit issues the same
    // collective on its way out.
    if ctx.sites.iter().any(|s| s.line() == guard.line && s.op == site.op) {
        return Judged::Quiet;
    }
    let (Some(test), Some(test_line)) = (&guard.condition, guard.condition_line) else {
        return Judged::Quiet;
    };
    // The leaving ranks issue what the staying ones issue later (staged barriers):
    // first counting every collective (no need to ask what the test depends on), then
    // without those on groups the test does not split.
    let balanced = |deps: &[desync_python::Dependence]| {
        super::paths::exit_is_balanced(ctx, site.function(), guard.line, guard.construct, deps)
    };
    if balanced(&[]) {
        return Judged::Quiet;
    }
    let mut deps = ctx.dependence(test_line, test);
    // `if rank == 0: ... if not overwrite: return` before a barrier after the block: only
    // the ranks the block admits can leave, whatever the exit's own test depends on.
    let blocks = enclosing_rank_blocks(ctx, site, guard, test_line);
    let holds = if blocks.is_empty() { "holds" } else { "hold" };
    let test = match blocks.first() {
        Some((outer, _)) => format!("{outer}` and `{test}"),
        None => test.clone(),
    };
    deps.extend(blocks.into_iter().flat_map(|(_, d)| d));
    if deps.is_empty() || balanced(&deps) {
        return Judged::Quiet;
    }
    if exits_paired_across_roles(ctx, site, guard.line, guard.construct) {
        return Judged::Quiet;
    }
    // `if rank == 0:` around the exit, every path through which issues the same collectives.
    if super::paths::inside_balanced_rank_split(ctx, site.function(), guard.line) {
        return Judged::Quiet;
    }
    // A rank test of another group skips this collective on whole groups at once.
    if !splits_group(&deps, site) {
        return Judged::NextSite;
    }
    let rank_only = deps.iter().all(|d| d.kind == DependenceKind::RankId);
    let in_loop = ctx.innermost_loop(site.function(), guard.line).is_some();
    let rule = match (rank_only, in_loop) {
        (true, _) => Rule::RankConditionalCollective,
        (false, true) => Rule::LocalEarlyExit,
        // Outside a loop a rank-local early return is usually input validation, unless
        // the rank decides it too (`local_rank` read by a helper that also asks
        // whether the variable is set at all), or the test reads what the rank computed
        // from its own data, clock or random draws, shown directly (`if not preds: return`
        // before gathering them): a guess about a parameter, a container's writes or a caught
        // exception there is far more often a helper's argument check.
        (false, false) if crate::context::has_rank_id(&deps) => Rule::RankConditionalCollective,
        (false, false) if deps.iter().any(shown_per_rank_values) => Rule::LocalEarlyExit,
        (false, false) => return Judged::Quiet,
    };
    let effect = match guard.construct {
        Construct::Continue => "skip the rest of the iteration",
        Construct::Break => "leave the loop",
        _ => "return early",
    };
    Judged::Report(Raw {
        rule,
        line: guard.line,
        column: None,
        keyword: Some(keyword),
        message: format!(
            "`{keyword}` makes the ranks where `{}` {holds} {effect} and skip {}, which \
             their peers issue: the test depends on {}, with no collective agreeing on \
             it first",
            short(&test),
            site.describe(),
            explain(&deps),
        ),
        indirect: decision_indirect(&deps),
    })
}

/// The rank tests of the `if`s around the exit `guard` (besides its own, on `test_line`)
/// whose clause holding it does not hold the skipped `site`, innermost first, with what
/// they depend on: the rank id only. The ranks such a block leaves out never reach the exit,
/// so whether a rank leaves is decided by the rank too. For `continue`/`break` only the
/// blocks inside the loop the exit leaves count.
fn enclosing_rank_blocks(
    ctx: &Context<'_>,
    site: &Site<'_>,
    guard: &Branch,
    test_line: u32,
) -> Vec<(String, Vec<desync_python::Dependence>)> {
    let function = site.function();
    let left = match guard.construct {
        Construct::Return => None,
        _ => match ctx.innermost_loop(function, guard.line) {
            Some(l) => Some(l),
            None => return Vec::new(),
        },
    };
    let mut out = Vec::new();
    for (cond, k) in ctx.enclosing_ifs(function, guard.line) {
        if left.is_some_and(|l| cond.line <= l.line) {
            break;
        }
        let clause = &cond.clauses[k];
        if clause.body.contains(site.line()) {
            break;
        }
        // The tests that decide the clause: its own, and those before it for `elif`/`else`.
        for c in &cond.clauses[..=k] {
            let (Some(t), Some(line)) = (&c.test, c.test_line) else { continue };
            if line == test_line {
                continue;
            }
            let rank: Vec<_> = ctx
                .dependence(line, t)
                .into_iter()
                .filter(|d| d.kind == DependenceKind::RankId)
                .collect();
            if !rank.is_empty() {
                out.push((t.clone(), rank));
            }
        }
    }
    out
}

/// Whether `d` shows directly that the value is what this rank computed from its own data,
/// clock or random draws (not a guess about a parameter, not through a container's writes).
fn shown_per_rank_values(d: &desync_python::Dependence) -> bool {
    !d.indirect
        && !d.guessed
        && matches!(
            d.kind,
            DependenceKind::LocalData | DependenceKind::Time | DependenceKind::Randomness
        )
}

/// `if not self.use_zero and dp_rank != 0: return`: the part of the test no rank decides
/// differently holds on every rank whenever any rank leaves, so the ranks that stay go on
/// with it holding too. The finding `raw` stands only if the exit still skips a collective
/// its peers issue once the function's collectives are found knowing that (the stayers'
/// helpers then issue only the `not use_zero` branch's collectives, perhaps on groups the
/// rank test does not split, or as many as the leavers issued).
fn with_uniform_parts_known(
    ctx: &Context<'_>,
    site: &Site<'_>,
    guard: &Branch,
    raw: Raw,
) -> Option<Raw> {
    let Some(function) = site.function() else { return Some(raw) };
    let Some((cond, clause)) = super::paths::innermost_clause(ctx, site.function(), guard.line)
    else {
        return Some(raw);
    };
    let Some(known) = super::uniform_parts(ctx, &cond.clauses[clause]) else { return Some(raw) };
    let known: Vec<(&str, bool)> = known.iter().map(|(t, h)| (t.as_str(), *h)).collect();
    let under = ctx.under(function, &known);
    let skippable = under.sites.iter().filter(|s| {
        s.function() == Some(function)
            && !s.is_point_to_point()
            && under
                .module
                .guards_with(under.analysis(), s.line())
                .iter()
                .any(|g| g.line == guard.line)
    });
    for s in skippable {
        match judge(&under, s, guard) {
            Judged::Quiet => return None,
            Judged::NextSite => {}
            Judged::Report(again) => return Some(again),
        }
    }
    None
}

/// Whether the jump at `jump_line` sits in one branch of an `if` that splits the ranks by
/// role (its test depends on the rank id; the skipped `site` comes after the `if`) under a
/// test of its own, and every other branch (an `else` included) has a guarded jump of the
/// same kind too: each role decides for itself whether to skip the collective, as a protocol
/// does (the source returns early for what it does not send, the receivers for what they did
/// not get). Pairing those decisions is the protocol's design, which the code at the jump
/// cannot show wrong, the same way a collective on every branch is paired.
fn exits_paired_across_roles(
    ctx: &Context<'_>,
    site: &crate::context::Site<'_>,
    jump_line: u32,
    construct: Construct,
) -> bool {
    let function = site.function();
    let jump_loop = ctx.innermost_loop(function, jump_line).map(|l| l.line);
    // A jump of the same kind inside `arm` that leaves the same way (the same loop, for
    // `continue`/`break`) and is itself under a test inside `arm`.
    let guarded_exit_in = |arm: &desync_python::LineRange| {
        ctx.outline.jumps.iter().any(|j| {
            j.function == function
                && j.construct == construct
                && arm.contains(j.line)
                && ctx.innermost_loop(function, j.line).map(|l| l.line) == jump_loop
                && ctx.outline.conditionals.iter().any(|inner| {
                    inner.function == function
                        && arm.contains(inner.line)
                        && inner.clauses.iter().any(|c| c.body.contains(j.line))
                })
        })
    };
    ctx.outline.conditionals.iter().filter(|c| c.function == function && c.has_else()).any(|c| {
        let last = c.last_line();
        let holds_jump = c.clauses.iter().any(|clause| clause.body.contains(jump_line));
        // The test's dependence is asked last: it follows the data, the rest reads the outline.
        let role_test = || {
            c.clauses[0].test.as_deref().zip(c.clauses[0].test_line).is_some_and(|(test, line)| {
                crate::context::has_rank_id(&ctx.dependence(line, test))
            })
        };
        holds_jump
            && site.line() > last
            && c.clauses.iter().all(|clause| guarded_exit_in(&clause.body))
            && role_test()
    })
}

/// `while` loops around a collective whose test is rank-local.
fn while_loops(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for lp in ctx.outline.loops.iter().filter(|l| l.is_while) {
        let Some(site) = ctx.sites_in(lp.function, lp.body.first, lp.body.last).next() else {
            continue;
        };
        let deps = ctx.dependence(lp.header_line, &lp.header);
        if deps.is_empty() {
            continue;
        }
        let rank_only = deps.iter().all(|d| d.kind == DependenceKind::RankId);
        out.push(Raw {
            rule: if rank_only { Rule::RankConditionalCollective } else { Rule::LocalEarlyExit },
            line: lp.line,
            column: Some(lp.column),
            keyword: Some("while"),
            message: format!(
                "`while {}` runs a different number of iterations on different ranks, so {} \
                 is issued a different number of times: the test depends on {}",
                short(&lp.header),
                site.describe(),
                explain(&deps),
            ),
            indirect: decision_indirect(&deps),
        });
    }
    out
}
