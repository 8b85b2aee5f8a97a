//! DSY001 and DSY004 on `if` statements whose test depends on the rank id: compare the
//! collectives each clause issues (a missing `else` issues none).
//!
//! - Different collectives (as a multiset of ops) → DSY001: some ranks issue a collective the
//!   others never do (`if rank == 0: dist.all_reduce(window)`).
//! - The same collectives in another order (op and process group) → DSY004.
//! - The same sequence → fine (`if rank == 0: broadcast(x, 0) else: broadcast(y, 0)`).
//!
//! Point-to-point calls are left out: `if rank == 0: send(...) else: recv(...)` is how they
//! are meant to be used. Two barrier-only `if`s with different rank tests in one function are
//! the staged "rank 0 first" pattern (`if rank != 0: barrier()` … `if rank == 0: barrier()`)
//! and are left alone too. A test that only says whether the job is distributed
//! (`local_rank != -1`) is the same on every rank (the flow analysis' decision rule).

use std::collections::HashMap;

use desync_python::{Conditional, Conjunct, DependenceKind};

use super::{Raw, explain, indirect, short};
use crate::context::{Context, Site, has_rank_id, splits_group};
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    // (function, test) of barrier-only candidates, to recognise staged pairs.
    let mut staged: Vec<(Option<u32>, String, Raw)> = Vec::new();
    let turns = super::turns::Memo::default();
    for cond in &ctx.outline.conditionals {
        let Some(judged) = judge_if(ctx, cond, &turns) else { continue };
        let Some(judged) = with_uniform_parts_known(ctx, cond, judged) else { continue };
        match judged {
            Judged::Staged(test, raw) => staged.push((cond.function, test, raw)),
            Judged::Report(raw) => out.push(raw),
        }
    }
    // Staged pairs: two barrier-only `if`s with different tests in one function.
    let mut per_function: HashMap<Option<u32>, Vec<String>> = HashMap::new();
    for (f, test, _) in &staged {
        per_function.entry(*f).or_default().push(test.clone());
    }
    for (f, test, raw) in staged {
        if !per_function[&f].iter().any(|t| *t != test) {
            out.push(raw);
        }
    }
    out
}

/// A finding on an `if`, or a barrier-only one kept until the function's other `if`s are
/// seen (its test: a staged pair has two different ones).
enum Judged {
    Report(Raw),
    Staged(String, Raw),
}

/// `if not self.use_zero and rank != 0: barrier(); return`: the part of the test no rank
/// decides differently holds on every rank whenever the rank test splits them, so the
/// function's collectives are found again knowing that, and the `if` judged again on them
/// (as `jumps::with_uniform_parts_known` does for exits).
fn with_uniform_parts_known(
    ctx: &Context<'_>,
    cond: &Conditional,
    judged: Judged,
) -> Option<Judged> {
    let Some(function) = cond.function else { return Some(judged) };
    let Some((split, ..)) = rank_test(ctx, cond) else { return Some(judged) };
    let Some(known) = super::uniform_parts(ctx, &cond.clauses[split]) else {
        return Some(judged);
    };
    let known: Vec<(&str, bool)> = known.iter().map(|(t, h)| (t.as_str(), *h)).collect();
    let under = ctx.under(function, &known);
    judge_if(&under, cond, &super::turns::Memo::default())
}

/// Whether the clauses of `cond` issue different collectives (or the same in other orders)
/// on ranks its rank-dependent test sends different ways.
fn judge_if(ctx: &Context<'_>, cond: &Conditional, turns: &super::turns::Memo) -> Option<Judged> {
    let all_clauses = clause_sites(ctx, cond);
    if all_clauses.iter().all(Vec::is_empty) {
        return None;
    }
    let (first_split, test, line, deps) = rank_test(ctx, cond)?;
    // The clauses before the first rank-dependent test are entered alike on every rank
    // (`if sharded: save_sharded() elif rank == 0: save_full()`): only the later ones,
    // the implicit `else` included, are chosen by the rank, and of those not the ones
    // entered only when a rank-independent part of that test fails.
    let unreachable = entered_only_when_uniform_part_fails(ctx, cond, first_split);
    let clauses: Vec<Vec<&Site<'_>>> = all_clauses[first_split..]
        .iter()
        .enumerate()
        .filter(|(k, _)| !unreachable.contains(&(first_split + k)))
        .map(|(_, c)| c.clone())
        .collect();
    let clauses = &clauses[..];
    if clauses.iter().all(Vec::is_empty) {
        return None;
    }
    // Every collective of the `if` runs in a group the test is not shown to split.
    if !clauses.iter().flatten().any(|s| splits_group(&deps, s)) {
        return None;
    }
    // A clause that leaves after issuing what the others issue later is paired with them.
    if super::paths::clauses_are_balanced(ctx, cond, &deps) == Some(true)
        || super::paths::if_is_balanced(ctx, cond, &deps)
    {
        return None;
    }
    if members_of_groups(ctx, cond, &all_clauses) {
        return None;
    }
    if leaders_add_their_own_group(clauses) {
        return None;
    }
    // Ranks taking turns: the nest of (in)equality tests around it issues the same
    // collectives on every rank.
    if super::turns::same_on_every_rank(ctx, cond, turns) {
        return None;
    }
    let keyed = |c: &Vec<&Site<'_>>| -> Vec<(String, Option<String>)> {
        c.iter().map(|s| (s.op.clone(), s.group().map(str::to_owned))).collect()
    };
    let first_ops = clause_ops(&clauses[0]);
    let first_keys = keyed(&clauses[0]);
    let differs = clauses.iter().position(|c| clause_ops(c) != first_ops);
    let reordered = clauses.iter().position(|c| keyed(c) != first_keys);
    let condition = format!("`{}` ({})", short(&test), explain(&deps));
    let rank_evidence_indirect = indirect(deps.iter().filter(|d| d.kind == DependenceKind::RankId));
    if let Some(other) = differs {
        // Name a collective that one side issues and the other does not: first one on a
        // group both sides use (its peers there wait for it), else any.
        let (a, b) = (&clauses[0], &clauses[other]);
        let mut missing = unmatched(a, b);
        missing.extend(unmatched(b, a));
        let on_both =
            |s: &&&Site<'_>| [a, b].iter().all(|c| c.iter().any(|o| o.group() == s.group()));
        let longer = if a.len() >= b.len() { a } else { b };
        let extra = missing
            .iter()
            .find(on_both)
            .or(missing.first())
            .or(longer.first())
            .map_or_else(String::new, |s| s.describe());
        let raw = Raw {
            rule: Rule::RankConditionalCollective,
            line,
            column: (line == cond.line).then_some(cond.column),
            keyword: Some(if line == cond.line { "if" } else { "elif" }),
            message: format!(
                "{extra} runs only on some ranks: the branch depends on {condition}, so the \
                 other ranks never issue it and its peers wait"
            ),
            indirect: rank_evidence_indirect,
        };
        let barrier_only = clauses.iter().flatten().all(|s| s.op.contains("barrier"));
        if barrier_only && cond.clauses.len() == 1 {
            return Some(Judged::Staged(test, raw));
        }
        return Some(Judged::Report(raw));
    } else if let Some(other) = reordered {
        let list = |c: &Vec<&Site<'_>>| {
            c.iter().map(|s| format!("`{}`", s.op)).collect::<Vec<_>>().join(", ")
        };
        return Some(Judged::Report(Raw {
            rule: Rule::RankDependentOrder,
            line,
            column: (line == cond.line).then_some(cond.column),
            keyword: Some("if"),
            message: format!(
                "the branches issue the same collectives in different orders ({} vs {}) \
                 and the branch depends on {condition}: ranks that disagree wait for each \
                 other in different collectives",
                list(&clauses[0]),
                list(&clauses[other]),
            ),
            indirect: rank_evidence_indirect,
        }));
    }
    None
}

/// The ops a clause issues, as a multiset (sorted).
pub(super) fn clause_ops(clause: &[&Site<'_>]) -> Vec<String> {
    let mut v: Vec<String> = clause.iter().map(|s| s.op.clone()).collect();
    v.sort_unstable();
    v
}

/// The collectives of `x` that `y` has no counterpart for (by op, each counterpart used once).
fn unmatched<'s, 'c>(x: &[&'s Site<'c>], y: &[&Site<'_>]) -> Vec<&'s Site<'c>> {
    let mut used = vec![false; y.len()];
    let mut out = Vec::new();
    for s in x {
        match (0..y.len()).find(|&j| !used[j] && y[j].op == s.op) {
            Some(j) => used[j] = true,
            None => out.push(*s),
        }
    }
    out
}

/// The clauses after `split` (indexes into `cond.clauses`) that no rank enters when the rank
/// decides `split`'s test: `if not in_order and should_log(rank): log() elif in_order:
/// barrier()` — the `elif` runs only where `not in_order` fails, which is the same on every
/// rank, and there no rank enters the first clause either. A part of the test is
/// rank-independent when nothing is shown to make it differ across ranks.
fn entered_only_when_uniform_part_fails(
    ctx: &Context<'_>,
    cond: &Conditional,
    split: usize,
) -> Vec<usize> {
    let clause = &cond.clauses[split];
    let line = clause.test_line.unwrap_or(clause.line);
    if clause.conjuncts.len() < 2 {
        return Vec::new();
    }
    let uniform: Vec<&Conjunct> =
        clause.conjuncts.iter().filter(|c| ctx.dependence(line, &c.text).is_empty()).collect();
    (split + 1..cond.clauses.len())
        .filter(|&j| {
            cond.clauses[j].conjuncts.iter().any(|c| uniform.iter().any(|u| u.contradicts(c)))
        })
        .collect()
}

/// The collective sites of each clause (non-p2p), plus an empty one for a missing `else`.
pub(super) fn clause_sites<'c>(ctx: &'c Context<'_>, cond: &Conditional) -> Vec<Vec<&'c Site<'c>>> {
    let mut clauses: Vec<Vec<&Site<'_>>> = cond
        .clauses
        .iter()
        .map(|c| {
            // What a rank issues on its way to dying (`barrier(); raise`) pairs with nothing.
            ctx.sites_in(cond.function, c.body.first, c.body.last)
                .filter(|s| !s.is_point_to_point())
                .filter(|s| !ctx.in_dying_handler(cond.function, s.line()))
                .collect()
        })
        .collect();
    if !cond.has_else() {
        clauses.push(Vec::new());
    }
    clauses
}

/// A sub-group's collectives issued by its members: a clause's test asks whether the rank is
/// in a collection (`if dist.get_rank() in ranks:`, `if rank not in group_ranks: skip`, or a
/// call of a project helper true only inside such a test: `Analysis::tests_membership`),
/// every collective of the `if` names a process group, the clauses that issue any issue the same
/// (op, group) sequence, and the clauses that issue none are the non-members' (after an `in`
/// clause, or the `not in` clause itself). A rank outside a group has nothing to issue on it.
/// The sequence is compared without the roots: `broadcast(t, src=self_rank, group=g)` on the
/// leader and `broadcast(t, src=leader, group=g)` on the members pair.
fn members_of_groups(ctx: &Context<'_>, cond: &Conditional, clauses: &[Vec<&Site<'_>>]) -> bool {
    let mut tested = false;
    for (i, clause) in cond.clauses.iter().enumerate() {
        let line = clause.test_line.unwrap_or(clause.line);
        let negated = match (&clause.membership, &clause.test) {
            (Some(m), _) if has_rank_id(&ctx.dependence(line, &m.member)) => m.negated,
            // `if self._is_in_embd_group():`, a helper true only inside `if rank in ranks:`.
            (None, Some(test)) if ctx.analysis().tests_membership(ctx.module, line, test) => false,
            _ => continue,
        };
        let silent: Vec<usize> = (0..clauses.len()).filter(|&j| clauses[j].is_empty()).collect();
        let non_members_silent = if negated {
            silent == [i]
        } else {
            !clauses[i].is_empty() && silent.iter().all(|&j| j > i)
        };
        if !non_members_silent {
            return false;
        }
        tested = true;
    }
    if !tested {
        return false;
    }
    let named = |s: &&Site<'_>| s.group().is_some();
    if !clauses.iter().flatten().all(named) {
        return false;
    }
    let keyed = |c: &Vec<&Site<'_>>| -> Vec<(String, Option<String>)> {
        c.iter().map(|s| (s.op.clone(), s.group().map(str::to_owned))).collect()
    };
    let mut issuing = clauses.iter().filter(|c| !c.is_empty()).map(keyed);
    let first = issuing.next();
    issuing.all(|k| Some(k) == first)
}

/// A hierarchical exchange: the leader's clause and the members' clause issue the same
/// collectives on every group they both name, and the leader's adds collectives on a group
/// the other clauses never name (`if rank == src: gather(g=intra); all_to_all(g=inter);
/// scatter(g=intra) else: gather(g=intra); scatter(g=intra)`): that group is the leaders'
/// own, which the members are not in. Every collective names its group, and at least one
/// group is named by every clause (a missing `else` names none, and so still fires).
fn leaders_add_their_own_group(clauses: &[Vec<&Site<'_>>]) -> bool {
    if clauses.len() < 2 || !clauses.iter().flatten().all(|s| s.group().is_some()) {
        return false;
    }
    let on = |c: &Vec<&Site<'_>>, g: &str| -> Vec<String> {
        c.iter().filter(|s| s.group() == Some(g)).map(|s| s.op.clone()).collect()
    };
    let names = |c: &Vec<&Site<'_>>, g: &str| c.iter().any(|s| s.group() == Some(g));
    let mut groups: Vec<&str> = clauses.iter().flatten().filter_map(|s| s.group()).collect();
    groups.sort_unstable();
    groups.dedup();
    let (shared, own): (Vec<&str>, Vec<&str>) =
        groups.into_iter().partition(|g| clauses.iter().all(|c| names(c, g)));
    !shared.is_empty()
        && !own.is_empty()
        && shared.iter().all(|g| clauses.iter().all(|c| on(c, g) == on(&clauses[0], g)))
}

/// The first test of the chain that depends on the rank id: (its clause's index, text, line,
/// dependence).
pub(super) fn rank_test(
    ctx: &Context<'_>,
    cond: &Conditional,
) -> Option<(usize, String, u32, Vec<desync_python::Dependence>)> {
    cond.clauses.iter().enumerate().find_map(|(i, clause)| {
        let test = clause.test.as_ref()?;
        let line = clause.test_line.unwrap_or(clause.line);
        let deps = ctx.dependence(line, test);
        has_rank_id(&deps).then(|| (i, test.clone(), clause.line, deps))
    })
}
