//! DSY007: a collective under a test of whether a file exists, which every rank makes on its
//! own, for a file that only some ranks read.
//!
//! ```python
//! if train_state_path.exists():          # each rank asks its own view of the file system
//!     box = [None]
//!     if dist.get_rank() == 0:
//!         box[0] = torch.load(train_state_path)   # ... but only rank 0 reads the file
//!     dist.broadcast_object_list(box, src=0)      # a rank that missed it never gets here
//! ```
//!
//! A file that the code reads on one rank and hands to the others is not one it relies on the
//! others seeing: it may sit on rank 0's local disk, or on a shared file system whose clients
//! answer from attributes they cached before rank 0 wrote it. Yet every rank's own answer
//! decides whether it joins the collective. A test of a file every rank reads (each loads its
//! own copy) is left alone: the job already needs every rank to see that file, and a
//! configuration or checkpoint layout tested alike everywhere is the usual case.

use desync_python::{Conditional, Construct, LineRange};

use super::Raw;
use super::conditional::{clause_ops, clause_sites, rank_test};
use crate::context::Context;
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    let spellings = desync_python::file_probe_spellings(ctx.module);
    for cond in &ctx.outline.conditionals {
        // Most `if`s neither hold a collective nor leave before one.
        let end = cond.last_line();
        let holds_site = ctx.sites_in(cond.function, cond.line, end).next().is_some();
        let leaves = || {
            ctx.outline
                .jumps
                .iter()
                .any(|j| j.function == cond.function && (cond.line..=end).contains(&j.line))
        };
        if !holds_site && !leaves() {
            continue;
        }
        // An `if` the rank decides is DSY001's (asked last: it is the costly question).
        if let Some(raw) = probed_collective(ctx, cond, end, &spellings)
            && rank_test(ctx, cond).is_none()
        {
            out.push(raw);
        }
    }
    out
}

/// The finding on `cond`, when a clause's test probes a file that some ranks read under a test
/// of the rank, around a collective not every outcome of the test leads to: in a clause the
/// test chooses (the other clauses issue other collectives), or after the `if` when the clause
/// leaves (`if not path.exists(): return`).
fn probed_collective(
    ctx: &Context<'_>,
    cond: &Conditional,
    end: u32,
    spellings: &[String],
) -> Option<Raw> {
    let mut clauses = None;
    for (i, clause) in cond.clauses.iter().enumerate() {
        let Some(test) = &clause.test else { continue };
        let test_line = clause.test_line.unwrap_or(clause.line);
        // Asked first: most tests probe no file, and say so from their text.
        if !spellings.iter().any(|w| desync_python::has_word(test, w)) {
            continue;
        }
        let probes = ctx.analysis().file_probes(ctx.module, test_line, test);
        if probes.is_empty() {
            continue;
        }
        let clauses = clauses.get_or_insert_with(|| clause_sites(ctx, cond));
        // Where the test's outcome leads: the clauses it chooses between (its own and every
        // later one, the implicit `else` included) when their collectives differ, and the
        // code its clause's exit skips when the clause issues none itself.
        let chosen = &clauses[i..];
        let mut regions: Vec<(LineRange, Outcome)> = Vec::new();
        if chosen.iter().any(|c| clause_ops(c) != clause_ops(&chosen[0])) {
            regions.extend(
                cond.clauses[i..]
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (c.body, if k == 0 { Outcome::Holds } else { Outcome::Fails })),
            );
        }
        if clauses[i].is_empty()
            && let Some((jump, skipped)) = skipped_by_exit(ctx, cond, clause.body, end)
        {
            regions.push((skipped, Outcome::Leaves(jump)));
        }
        for probe in &probes {
            for &(region, outcome) in &regions {
                let Some(read) = read_on_some_ranks(ctx, cond.function, region, &probe.path) else {
                    continue;
                };
                let Some(site) = ctx
                    .sites_in(cond.function, region.first, region.last)
                    .find(|s| !s.is_point_to_point() && !read.guard.contains(s.line()))
                else {
                    continue;
                };
                let test = super::short(test);
                let taken = match outcome {
                    Outcome::Holds => format!("where `{test}` holds (line {test_line})"),
                    Outcome::Fails => format!("where `{test}` fails (line {test_line})"),
                    Outcome::Leaves(jump) => format!(
                        "where `{test}` fails (line {test_line}; the others leave at line {jump})"
                    ),
                };
                let message = format!(
                    "{} runs only on the ranks {taken}, a test each rank answers from its own \
                     view of the file system (`{}`), yet only some ranks read the file (`{}` \
                     at line {}, under `{}`): a rank that does not see it (a node-local disk, \
                     a shared file system's cached attributes, a write not yet visible) takes \
                     the other way and its peers wait",
                    site.describe(),
                    super::short(&probe.probe),
                    super::short(&read.call),
                    read.line,
                    super::short(&read.rank_test),
                );
                let keyword = if clause.line == cond.line { "if" } else { "elif" };
                return Some(Raw {
                    rule: Rule::PerRankFileTest,
                    line: clause.line,
                    column: (clause.line == cond.line).then_some(cond.column),
                    keyword: Some(keyword),
                    message,
                    indirect: false,
                });
            }
        }
    }
    None
}

/// Which way a test's outcome leads to the collective.
#[derive(Clone, Copy)]
enum Outcome {
    /// Into the clause of the test.
    Holds,
    /// Into a later clause.
    Fails,
    /// Past the `if`: the test's clause leaves at this line.
    Leaves(u32),
}

/// The exit in `body` (a clause of `cond`, whose clauses end at `end`) and the lines it skips:
/// the rest of the function for a `return`, the rest of the innermost loop's body for a
/// `continue` or `break`.
fn skipped_by_exit(
    ctx: &Context<'_>,
    cond: &Conditional,
    body: LineRange,
    end: u32,
) -> Option<(u32, LineRange)> {
    // The clause's last exit: the one it ends with when it ends with one.
    let jump = ctx
        .outline
        .jumps
        .iter()
        .filter(|j| j.function == cond.function && body.contains(j.line))
        .max_by_key(|j| j.line)?;
    let last = match jump.construct {
        Construct::Return => ctx.function(cond.function?)?.end_line,
        Construct::Continue | Construct::Break => {
            let around = ctx.innermost_loop(cond.function, cond.line)?;
            // A `continue` of a loop inside the clause leaves only that loop.
            let own = ctx.innermost_loop(cond.function, jump.line)?;
            if own.line != around.line {
                return None;
            }
            around.body.last
        }
        _ => return None,
    };
    (last > end).then_some((jump.line, LineRange { first: end + 1, last }))
}

/// A read of a file under a test of the rank: where, what, and the `if` that guards it.
struct GuardedRead {
    line: u32,
    call: String,
    rank_test: String,
    /// The lines of the guarding `if`, clauses included.
    guard: LineRange,
}

/// The first read of `path` in `body` (lines of `function`) that sits in an `if` decided by the
/// rank (`if dist.get_rank() == 0: state = torch.load(path)`).
fn read_on_some_ranks(
    ctx: &Context<'_>,
    function: Option<u32>,
    body: LineRange,
    path: &str,
) -> Option<GuardedRead> {
    ctx.outline
        .conditionals
        .iter()
        .filter(|c| c.function == function && body.contains(c.line))
        .find_map(|guard| {
            let (_, rank_test, ..) = rank_test(ctx, guard)?;
            let last = guard.last_line();
            let (line, call) = guard.clauses.iter().find_map(|c| {
                ctx.analysis().file_read(ctx.module, c.body.first, c.body.last, path)
            })?;
            Some(GuardedRead {
                line,
                call,
                rank_test,
                guard: LineRange { first: guard.line, last },
            })
        })
}
