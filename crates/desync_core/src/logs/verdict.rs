//! A verdict from a log, only as strong as its lines: every claim cites them, and the
//! category is the first of these that the log shows (else `inconclusive`):
//!
//! 1. `crash` — ranks raised an error of their own (a traceback whose exception is not a
//!    waiter's symptom, or a watchdog that died of a CUDA error): those ranks;
//! 2. torch's desync-debug report names ranks that lagged, died or went elsewhere: those
//!    ranks, category `inconclusive` (the report does not say which of the three);
//! 3. `stall` — in one named process group, a rank whose last enqueued seq is below the seq
//!    its peers time out in: it never issued that collective, and issued nothing after it;
//! 4. `divergence` / `metadata_mismatch` — in one named group, ranks time out at the same seq
//!    in different ops / with different element counts where the op needs equal ones. Which
//!    side departed is not in the log: no culprit;
//! 5. `stall` — the log covers the whole world (torchrun's table, closed, lists ranks
//!    0..n-1), every rank but a few timed out or failed on a peer's exit, and those few
//!    neither timed out nor raised and were still running when the agent stopped them.
//!
//! What is never a culprit: a rank the log does not show; the first rank to time out (a
//! waiter); torchrun's "first observed failure"; ranks aborted by SIGABRT (what the watchdog
//! does to every waiter).

use serde::Serialize;

use super::nccl::{GroupName, TimedOut};
use super::traceback::Traceback;
use super::{Cite, LogEvidence};
use crate::diagnose::Category;
use crate::model::RankSet;

/// What a claim is about (JSON `claims[].kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// Ranks the watchdog reported timed out in a collective.
    TimedOut,
    /// A rank that never issued the collective its group's peers time out in.
    Behind,
    /// Ranks at the same seq of one group in different ops or sizes.
    Mismatch,
    /// A rank that raised an error of its own.
    Raised,
    /// A rank that failed waiting on a peer (timeout, a peer's socket closed).
    FailedWaiting,
    /// The rank whose watchdog fired first: a waiter.
    FirstToTimeOut,
    /// torch's desync-debug report names ranks.
    DesyncReport,
    /// Ranks that neither timed out nor raised in a log covering the whole world.
    Silent,
    /// torchrun's table: exits and signals.
    Exited,
    /// Lines that are not compared, and why.
    NotCompared,
}

#[derive(Debug, Clone, Serialize)]
pub struct Claim {
    pub kind: ClaimKind,
    #[serde(flatten, serialize_with = "crate::report::serialize_rank_vec")]
    pub ranks: Vec<u32>,
    /// The group's label (`GUID 1`, `PG 0`) and description, when the lines name one.
    pub process_group: Option<GroupRef>,
    pub collective_seq_id: Option<u64>,
    pub text: String,
    pub evidence: Vec<Cite>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRef {
    pub name: String,
    pub desc: String,
}

impl From<&GroupName> for GroupRef {
    fn from(g: &GroupName) -> Self {
        Self { name: g.label.clone(), desc: g.desc.clone() }
    }
}

#[derive(Debug, Clone)]
pub struct LogVerdict {
    pub category: Category,
    pub culprit_ranks: Vec<u32>,
    pub process_group: Option<GroupRef>,
    pub collective_seq_id: Option<u64>,
    pub headline: String,
    pub claims: Vec<Claim>,
}

/// Collectives whose element counts NCCL requires equal on every rank (a different count is
/// a size mismatch, not a legitimate difference): counts of the input buffer.
const EQUAL_COUNT_OPS: &[&str] = &[
    "ALLREDUCE",
    "BROADCAST",
    "REDUCE",
    "ALLGATHER",
    "_ALLGATHER_BASE",
    "REDUCE_SCATTER",
    "_REDUCE_SCATTER_BASE",
];

/// At most this many lines are cited per claim (a 1,000-rank log has 1,000 alike).
const CITES_PER_CLAIM: usize = 4;

pub fn decide(e: &LogEvidence) -> LogVerdict {
    let mut claims = Vec::new();
    let raised = raised_claims(e, &mut claims);
    let waiting = waiting_claims(e, &mut claims);
    let (behind, mismatch) = group_claims(e, &mut claims);
    let desync_named = desync_claims(e, &mut claims);
    first_to_time_out_claims(e, &mut claims);
    exit_claims(e, &mut claims);
    let silent = silent_claim(e, &raised, &waiting, &mut claims);

    let mut v = LogVerdict {
        category: Category::Inconclusive,
        culprit_ranks: Vec::new(),
        process_group: None,
        collective_seq_id: None,
        headline: String::new(),
        claims: Vec::new(),
    };
    if !raised.is_empty() {
        v.category = Category::Crash;
        v.culprit_ranks = raised;
        v.headline = headline_from(&claims, ClaimKind::Raised);
    } else if !desync_named.is_empty() {
        v.culprit_ranks = desync_named;
        v.headline = format!(
            "{}; the report does not say whether {} lagged, died or took another path",
            headline_from(&claims, ClaimKind::DesyncReport),
            if v.culprit_ranks.len() == 1 { "it" } else { "they" }
        );
    } else if let Some(b) = behind {
        v.category = Category::Stall;
        v.culprit_ranks.clone_from(&b.ranks);
        v.process_group.clone_from(&b.process_group);
        v.collective_seq_id = b.collective_seq_id;
        v.headline.clone_from(&b.text);
    } else if let Some((category, m)) = mismatch {
        v.category = category;
        v.process_group.clone_from(&m.process_group);
        v.collective_seq_id = m.collective_seq_id;
        v.headline = format!("{} (which side departed is not in the log)", m.text);
    } else if !silent.is_empty() {
        v.category = Category::Stall;
        v.culprit_ranks = silent;
        v.headline = headline_from(&claims, ClaimKind::Silent);
    } else {
        v.headline = inconclusive_headline(e, &claims);
    }
    v.claims = claims;
    v
}

/// The texts of the claims of `kind`, joined: the first [`HEADLINE_CLAIMS`], then a count
/// (a whole world can raise, one claim per rank).
fn headline_from(claims: &[Claim], kind: ClaimKind) -> String {
    let of_kind: Vec<&str> =
        claims.iter().filter(|c| c.kind == kind).map(|c| c.text.as_str()).collect();
    let mut parts: Vec<String> =
        of_kind.iter().take(HEADLINE_CLAIMS).map(|t| (*t).to_owned()).collect();
    if of_kind.len() > HEADLINE_CLAIMS {
        parts.push(format!("and {} more like these", of_kind.len() - HEADLINE_CLAIMS));
    }
    parts.join("; ")
}

/// Claims a headline quotes before it counts the rest.
const HEADLINE_CLAIMS: usize = 3;

fn inconclusive_headline(e: &LogEvidence, claims: &[Claim]) -> String {
    let timed_out: Vec<u32> = ranks_of(claims, ClaimKind::TimedOut);
    let waiting: Vec<u32> = ranks_of(claims, ClaimKind::FailedWaiting);
    let first = ranks_of(claims, ClaimKind::FirstToTimeOut);
    if !timed_out.is_empty() {
        format!(
            "the log shows {} waiting (timed out), and no rank behind, crashed or elsewhere: a log of waiters does not name the culprit",
            rank_words(&timed_out)
        )
    } else if !waiting.is_empty() {
        format!(
            "{} failed waiting on a peer, and no rank's own error is in the log",
            rank_words(&waiting)
        )
    } else if !first.is_empty() {
        format!(
            "{} timed out first and signalled the dump (a waiter); the log shows no rank behind, crashed or elsewhere",
            rank_words(&first)
        )
    } else if !e.failures.exits.is_empty() {
        "torchrun's table shows how ranks exited, not why: no rank's own error is in the log"
            .to_owned()
    } else {
        "the log shows no timed-out collective, traceback or failure table desync can align"
            .to_owned()
    }
}

/// `rank 2` / `ranks 0-3`; a long set briefly (`12500 ranks: 0,8,16,…`).
fn rank_words(ranks: &[u32]) -> String {
    let s = if ranks.len() == 1 { "" } else { "s" };
    format!("rank{s} {}", RankSet::new(ranks.to_vec()).brief())
}

fn ranks_of(claims: &[Claim], kind: ClaimKind) -> Vec<u32> {
    let mut ranks: Vec<u32> =
        claims.iter().filter(|c| c.kind == kind).flat_map(|c| c.ranks.iter().copied()).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// Ranks whose own error the log shows; one claim per rank.
fn raised_claims(e: &LogEvidence, claims: &mut Vec<Claim>) -> Vec<u32> {
    let mut ranks = Vec::new();
    for t in e.tracebacks.iter().filter(|t| t.symptom.is_none()) {
        let Some(rank) = t.rank else { continue };
        let at = t.user_frame.as_ref().map_or_else(
            || " (every frame shown is library code)".to_owned(),
            |f| format!(" at {}:{} in {}", f.file, f.line, f.function),
        );
        let text = format!("rank {rank} raised `{}`{at}", short(&t.exception));
        own_end(&mut ranks, claims, rank, text, &t.cite);
    }
    terminated_claims(e, &mut ranks, claims);
    logged_exit_claims(e, &mut ranks, claims);
    for w in &e.nccl.watchdog_errors {
        let Some(rank) = w.rank else { continue };
        let text =
            format!("rank {rank}'s watchdog died of `{}`, not of a timeout", short(&w.message));
        own_end(&mut ranks, claims, rank, text, &w.cite);
    }
    // A fault signal in torchrun's table is the rank's own end; SIGABRT is not (the watchdog
    // aborts every waiter), nor SIGTERM/SIGKILL (the agent stops the rest).
    for x in &e.failures.exits {
        let Some(signal) = x.signal.as_deref().filter(|s| FAULT_SIGNALS.contains(s)) else {
            continue;
        };
        let text = format!(
            "rank {} was killed by {signal} (torchrun's table): a fault of its own, not a timeout",
            x.rank
        );
        own_end(&mut ranks, claims, x.rank, text, &x.cite);
    }
    ranks.sort_unstable();
    ranks
}

/// Claims `rank`'s own end once: the first source [`raised_claims`] reads for a rank (its
/// traceback first, torchrun's table last) is the one cited.
fn own_end(ranks: &mut Vec<u32>, claims: &mut Vec<Claim>, rank: u32, text: String, cite: &Cite) {
    if ranks.contains(&rank) {
        return;
    }
    ranks.push(rank);
    claims.push(Claim {
        kind: ClaimKind::Raised,
        ranks: vec![rank],
        process_group: None,
        collective_seq_id: None,
        text,
        evidence: vec![cite.clone()],
    });
}

/// A rank the C++ runtime ended on an uncaught exception of its own (`terminate called after
/// throwing an instance of 'gloo::EnforceNotMet'`, `what()`: a size its peer disagrees on): the
/// line is the process's end, whatever its peers show. A terminate whose exception is a
/// waiter's (the watchdog's timeout, a peer's closed socket) was left out when it was read.
fn terminated_claims(e: &LogEvidence, ranks: &mut Vec<u32>, claims: &mut Vec<Claim>) {
    for l in e.logged_errors.iter().filter(|l| l.fatal) {
        let Some(rank) = l.rank else { continue };
        let text = format!(
            "rank {rank} was ended by the C++ runtime on an uncaught exception of its own: `{}`",
            short(&l.message)
        );
        own_end(ranks, claims, rank, text, &l.cite);
    }
}

/// A rank that logged an error and ended leaves no traceback (`log.error(...)` then
/// `sys.exit(2)`). Its last error record is its own error when its peers failed because a
/// peer's process exited under them, and the rank itself neither failed on a peer nor timed
/// out: the exit the peers saw is the one that logged rank's. Without that exit, an error
/// record is only a line (a job logs errors and carries on).
fn logged_exit_claims(e: &LogEvidence, ranks: &mut Vec<u32>, claims: &mut Vec<Claim>) {
    let exit_seen: Vec<&Traceback> = e
        .tracebacks
        .iter()
        .filter(|t| t.symptom.is_some() && super::traceback::peer_exited(&t.exception))
        .collect();
    if exit_seen.is_empty() {
        return;
    }
    let waiters: Vec<u32> = e
        .tracebacks
        .iter()
        .filter(|t| t.symptom.is_some())
        .filter_map(|t| t.rank)
        .chain(e.nccl.timeouts.iter().filter_map(|t| t.rank))
        .collect();
    let mut logged: Vec<&super::logged::LoggedError> = Vec::new();
    for l in e.logged_errors.iter().rev().filter(|l| !l.fatal) {
        let Some(rank) = l.rank else { continue };
        if ranks.contains(&rank)
            || waiters.contains(&rank)
            || logged.iter().any(|k| k.rank == l.rank)
        {
            continue;
        }
        logged.push(l);
    }
    for l in logged {
        let rank = l.rank.unwrap_or_default();
        ranks.push(rank);
        let seen: Vec<u32> = exit_seen.iter().filter_map(|t| t.rank).collect();
        claims.push(Claim {
            kind: ClaimKind::Raised,
            ranks: vec![rank],
            process_group: None,
            collective_seq_id: None,
            text: format!(
                "rank {rank} logged `{}` and ended: {} failed on a peer's exit, and rank {rank} failed on no peer",
                short(&l.message),
                rank_words(&seen)
            ),
            evidence: std::iter::once(l.cite.clone())
                .chain(exit_seen.iter().take(CITES_PER_CLAIM - 1).map(|t| t.cite.clone()))
                .collect(),
        });
    }
}

/// Signals that end a process by a fault of its own (a segfault in an extension, a bus error
/// on a truncated mmap), as torchrun's table names them.
const FAULT_SIGNALS: &[&str] = &["SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"];

/// Ranks that failed on a peer (a symptom traceback); one claim for all.
fn waiting_claims(e: &LogEvidence, claims: &mut Vec<Claim>) -> Vec<u32> {
    let waiting: Vec<_> =
        e.tracebacks.iter().filter(|t| t.symptom.is_some() && t.rank.is_some()).collect();
    let mut ranks: Vec<u32> = waiting.iter().filter_map(|t| t.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if let Some(first) = waiting.first() {
        let at = first
            .user_frame
            .as_ref()
            .map(|f| {
                format!(
                    " (rank {}'s innermost user line: {}:{})",
                    first.rank.unwrap_or(0),
                    f.file,
                    f.line
                )
            })
            .unwrap_or_default();
        claims.push(Claim {
            kind: ClaimKind::FailedWaiting,
            ranks: ranks.clone(),
            process_group: None,
            collective_seq_id: None,
            text: format!(
                "{} failed waiting on a peer: {}{at}",
                rank_words(&ranks),
                first.symptom.unwrap_or_default()
            ),
            evidence: waiting.iter().take(CITES_PER_CLAIM).map(|t| t.cite.clone()).collect(),
        });
    }
    ranks
}

/// Per named group: who timed out where, who is behind, who disagrees. Returns the first
/// `behind` claim and the first mismatch (with its category).
fn group_claims(
    e: &LogEvidence,
    claims: &mut Vec<Claim>,
) -> (Option<Claim>, Option<(Category, Claim)>) {
    let mut groups: Vec<Option<&GroupName>> = Vec::new();
    for g in e
        .nccl
        .timeouts
        .iter()
        .map(|t| t.group.as_ref())
        .chain(e.nccl.progress.iter().map(|p| p.group.as_ref()))
    {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut behind = None;
    let mut mismatch = None;
    for group in groups {
        let timeouts: Vec<&TimedOut> =
            e.nccl.timeouts.iter().filter(|t| t.group.as_ref() == group).collect();
        timed_out_claims(&timeouts, group, claims);
        let Some(group) = group else {
            let mut seqs: Vec<u64> = timeouts.iter().map(|t| t.seq).collect();
            seqs.sort_unstable();
            seqs.dedup();
            if seqs.len() > 1 {
                claims.push(Claim {
                    kind: ClaimKind::NotCompared,
                    ranks: ranks_in(&timeouts),
                    process_group: None,
                    collective_seq_id: None,
                    text: "these timeout lines name no process group: their seqs may count different groups and are not compared".to_owned(),
                    evidence: timeouts.iter().take(CITES_PER_CLAIM).map(|t| t.cite.clone()).collect(),
                });
            }
            continue;
        };
        let pg = Some(GroupRef::from(group));
        // The seq peers wait in: the highest a rank timed out at (its own or its progress line).
        let failed = timeouts
            .iter()
            .map(|t| (t.seq, t.rank, &t.cite))
            .chain(
                e.nccl
                    .progress
                    .iter()
                    .filter(|p| p.group.as_ref() == Some(group))
                    .filter_map(|p| Some((p.failed_seq?, p.rank, &p.cite))),
            )
            .max_by_key(|(seq, ..)| *seq);
        if let Some((seq, waiter, waiter_cite)) = failed {
            let late: Vec<_> = e
                .nccl
                .progress
                .iter()
                .filter(|p| p.group.as_ref() == Some(group) && p.rank.is_some() && p.rank != waiter)
                .filter(|p| p.last_enqueued.is_some_and(|last| last < seq as i64))
                .collect();
            if let Some(p) = late.first() {
                let ranks: Vec<u32> = late.iter().filter_map(|p| p.rank).collect();
                let claim = Claim {
                    kind: ClaimKind::Behind,
                    ranks: ranks.clone(),
                    process_group: pg.clone(),
                    collective_seq_id: Some(seq),
                    text: format!(
                        "{} never issued seq {seq} of group {} that its peers time out in: last enqueued work {}",
                        rank_words(&ranks),
                        group.label,
                        p.last_enqueued.unwrap_or_default()
                    ),
                    evidence: std::iter::once(waiter_cite.clone())
                        .chain(late.iter().take(CITES_PER_CLAIM).map(|p| p.cite.clone()))
                        .collect(),
                };
                behind.get_or_insert(claim.clone());
                claims.push(claim);
            }
        }
        if let Some(m) = mismatch_claim(&timeouts, group) {
            mismatch.get_or_insert(m.clone());
            claims.push(m.1);
        }
    }
    (behind, mismatch)
}

fn timed_out_claims(timeouts: &[&TimedOut], group: Option<&GroupName>, claims: &mut Vec<Claim>) {
    let mut keys: Vec<(u64, Option<&str>, Option<u64>)> = Vec::new();
    for t in timeouts {
        let key = (t.seq, t.op.as_deref(), t.numel_in);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (seq, op, numel) in keys {
        let same: Vec<&&TimedOut> = timeouts
            .iter()
            .filter(|t| (t.seq, t.op.as_deref(), t.numel_in) == (seq, op, numel))
            .collect();
        let ranks: Vec<u32> = ranks_in(&same.iter().map(|t| **t).collect::<Vec<_>>());
        if ranks.is_empty() {
            continue;
        }
        let size = numel.map(|n| format!(" ({n} elements)")).unwrap_or_default();
        let pg = group.map_or_else(
            || " (the lines name no group)".to_owned(),
            |g| format!(" of group {}", label(g)),
        );
        claims.push(Claim {
            kind: ClaimKind::TimedOut,
            ranks: ranks.clone(),
            process_group: group.map(GroupRef::from),
            collective_seq_id: Some(seq),
            text: format!(
                "{} timed out in {} seq {seq}{size}{pg}",
                rank_words(&ranks),
                op.unwrap_or("a collective")
            ),
            evidence: same.iter().take(CITES_PER_CLAIM).map(|t| t.cite.clone()).collect(),
        });
    }
}

fn mismatch_claim(timeouts: &[&TimedOut], group: &GroupName) -> Option<(Category, Claim)> {
    for a in timeouts {
        for b in timeouts.iter().filter(|b| b.seq == a.seq && b.rank != a.rank) {
            let (Some(op_a), Some(op_b)) = (&a.op, &b.op) else { continue };
            let category = if op_a != op_b {
                Category::Divergence
            } else if EQUAL_COUNT_OPS.contains(&op_a.as_str())
                && a.numel_in.zip(b.numel_in).is_some_and(|(x, y)| x != y)
            {
                Category::MetadataMismatch
            } else {
                continue;
            };
            let what = |t: &TimedOut| {
                format!(
                    "rank {} in {}{}",
                    t.rank.map_or("?".to_owned(), |r| r.to_string()),
                    t.op.as_deref().unwrap_or("?"),
                    t.numel_in.map(|n| format!(" of {n} elements")).unwrap_or_default()
                )
            };
            let text =
                format!("at seq {} of group {}, {} but {}", a.seq, label(group), what(a), what(b));
            let ranks = ranks_in(&[*a, *b]);
            return Some((
                category,
                Claim {
                    kind: ClaimKind::Mismatch,
                    ranks,
                    process_group: Some(GroupRef::from(group)),
                    collective_seq_id: Some(a.seq),
                    text,
                    evidence: vec![a.cite.clone(), b.cite.clone()],
                },
            ));
        }
    }
    None
}

fn desync_claims(e: &LogEvidence, claims: &mut Vec<Claim>) -> Vec<u32> {
    let mut ranks: Vec<u32> =
        e.nccl.desync_named.iter().flat_map(|d| d.ranks.iter().copied()).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if !ranks.is_empty() {
        claims.push(Claim {
            kind: ClaimKind::DesyncReport,
            ranks: ranks.clone(),
            process_group: None,
            collective_seq_id: None,
            text: format!(
                "torch's desync report (TORCH_NCCL_DESYNC_DEBUG) names {}",
                rank_words(&ranks)
            ),
            evidence: e
                .nccl
                .desync_named
                .iter()
                .take(CITES_PER_CLAIM)
                .map(|d| d.cite.clone())
                .collect(),
        });
    }
    ranks
}

fn first_to_time_out_claims(e: &LogEvidence, claims: &mut Vec<Claim>) {
    let mut firsts: Vec<u32> =
        e.nccl.dump_signals.iter().filter_map(|d| d.first_to_time_out).collect();
    firsts.sort_unstable();
    firsts.dedup();
    for rank in firsts {
        claims.push(Claim {
            kind: ClaimKind::FirstToTimeOut,
            ranks: vec![rank],
            process_group: None,
            collective_seq_id: None,
            text: format!("rank {rank} timed out first and signalled the dump: the first to time out is a waiter, not the culprit"),
            evidence: e.nccl.dump_signals.iter().filter(|d| d.first_to_time_out == Some(rank)).take(CITES_PER_CLAIM).map(|d| d.cite.clone()).collect(),
        });
    }
}

fn exit_claims(e: &LogEvidence, claims: &mut Vec<Claim>) {
    let exits = &e.failures.exits;
    if exits.is_empty() {
        return;
    }
    let aborted: Vec<u32> =
        exits.iter().filter(|x| x.signal.as_deref() == Some("SIGABRT")).map(|x| x.rank).collect();
    if aborted.len() == exits.len() {
        claims.push(Claim {
            kind: ClaimKind::Exited,
            ranks: aborted.clone(),
            process_group: None,
            collective_seq_id: None,
            text: format!("every rank in torchrun's table ({}) was aborted by SIGABRT, what the watchdog does to each waiter: no exit stands out as the cause", RankSet::new(aborted.clone()).brief()),
            evidence: exits.iter().take(CITES_PER_CLAIM).map(|x| x.cite.clone()).collect(),
        });
    }
    if let Some(first) = exits.iter().find(|x| x.first_observed) {
        claims.push(Claim {
            kind: ClaimKind::Exited,
            ranks: vec![first.rank],
            process_group: None,
            collective_seq_id: None,
            text: format!(
                "torchrun's \"first observed failure\" is rank {} (exit code {}): the first to exit, which is often a waiter",
                first.rank,
                first.exit_code.map_or("?".to_owned(), |c| c.to_string())
            ),
            evidence: vec![first.cite.clone()],
        });
    }
}

/// Rule 5: in a log covering the whole world, the ranks that did not wait.
fn silent_claim(
    e: &LogEvidence,
    raised: &[u32],
    waiting: &[u32],
    claims: &mut Vec<Claim>,
) -> Vec<u32> {
    let exits = &e.failures.exits;
    let mut world: Vec<u32> = exits.iter().map(|x| x.rank).collect();
    world.sort_unstable();
    let whole = e.failures.complete && world.iter().enumerate().all(|(i, &r)| r == i as u32);
    let mut waiters: Vec<u32> =
        waiting.iter().copied().chain(e.nccl.timeouts.iter().filter_map(|t| t.rank)).collect();
    waiters.sort_unstable();
    waiters.dedup();
    if !whole || waiters.is_empty() || !raised.is_empty() {
        return Vec::new();
    }
    let silent: Vec<&super::launcher::Exit> =
        exits.iter().filter(|x| !waiters.contains(&x.rank)).collect();
    // Stopped by the agent while still running: SIGTERM / SIGKILL (exit codes -15 / -9).
    let stopped = |x: &&super::launcher::Exit| {
        matches!(x.signal.as_deref(), Some("SIGTERM" | "SIGKILL"))
            || matches!(x.exit_code, Some(-15 | -9))
    };
    if silent.is_empty() || silent.len() >= waiters.len() || !silent.iter().all(stopped) {
        return Vec::new();
    }
    let ranks: Vec<u32> = silent.iter().map(|x| x.rank).collect();
    claims.push(Claim {
        kind: ClaimKind::Silent,
        ranks: ranks.clone(),
        process_group: None,
        collective_seq_id: None,
        text: format!(
            "{} neither timed out nor raised, and was still running when torchrun stopped the job, while {} waited on a peer: the job's {} ranks are all in torchrun's table",
            rank_words(&ranks),
            rank_words(&waiters),
            world.len()
        ),
        evidence: silent.iter().map(|x| x.cite.clone()).collect(),
    });
    ranks
}

fn ranks_in(timeouts: &[&TimedOut]) -> Vec<u32> {
    let mut ranks: Vec<u32> = timeouts.iter().filter_map(|t| t.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

fn label(g: &GroupName) -> String {
    if g.desc.is_empty() { g.label.clone() } else { format!("{} ({})", g.label, g.desc) }
}

/// An exception line for a headline: its first 160 characters.
fn short(s: &str) -> String {
    match s.char_indices().nth(160) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}
