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

use desync_python::{Conditional, LineRange};

use super::Raw;
use super::conditional::{clause_sites, rank_test};
use crate::context::{Context, Site};
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for cond in &ctx.outline.conditionals {
        // An `if` the rank decides is DSY001's.
        if rank_test(ctx, cond).is_some() {
            continue;
        }
        if let Some(raw) = probed_collective(ctx, cond) {
            out.push(raw);
        }
    }
    out
}

/// The finding on `cond`, when a clause's test probes a file that a clause it chooses reads
/// on some ranks only, around a collective the other clauses do not issue.
fn probed_collective(ctx: &Context<'_>, cond: &Conditional) -> Option<Raw> {
    let clauses = clause_sites(ctx, cond);
    if clauses.iter().all(Vec::is_empty) {
        return None;
    }
    for (i, clause) in cond.clauses.iter().enumerate() {
        let Some(test) = &clause.test else { continue };
        let test_line = clause.test_line.unwrap_or(clause.line);
        let probes = ctx.analysis().file_probes(ctx.module, test_line, test);
        if probes.is_empty() {
            continue;
        }
        // The clauses this test chooses between: its own and every later one (the implicit
        // `else` included). Their collectives must differ for a wrong answer to matter.
        let chosen = &clauses[i..];
        if chosen.iter().all(|c| ops(c) == ops(&chosen[0])) {
            continue;
        }
        let bodies = cond.clauses[i..].iter().map(|c| c.body);
        for probe in &probes {
            for (k, body) in bodies.clone().enumerate() {
                let Some(read) = read_on_some_ranks(ctx, cond.function, body, &probe.path) else {
                    continue;
                };
                let Some(site) = ctx
                    .sites_in(cond.function, body.first, body.last)
                    .find(|s| !s.is_point_to_point() && !read.guard.contains(s.line()))
                else {
                    continue;
                };
                let keyword = if clause.line == cond.line { "if" } else { "elif" };
                let outcome = if k == 0 { "holds" } else { "fails" };
                let message = format!(
                    "{} runs only on the ranks where `{}` {outcome} (line {test_line}), a test \
                     each rank answers from its own view of the file system (`{}`), yet only \
                     the ranks where `{}` read the file (`{}` at line {}): a rank that does not \
                     see it (a node-local disk, a shared file system's cached attributes, a \
                     write not yet visible) takes the other way and its peers wait",
                    site.describe(),
                    super::short(test),
                    super::short(&probe.probe),
                    super::short(&read.rank_test),
                    super::short(&read.call),
                    read.line,
                );
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
            let last = guard.clauses.last().map_or(guard.line, |c| c.body.last);
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

/// The ops a clause issues, as a multiset.
fn ops(clause: &[&Site<'_>]) -> Vec<String> {
    let mut v: Vec<String> = clause.iter().map(|s| s.op.clone()).collect();
    v.sort_unstable();
    v
}
