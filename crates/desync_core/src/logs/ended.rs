//! Culprits of a stall that are not stuck: they ended their run having issued fewer
//! collectives than their peers.
//!
//! A dump cannot tell a rank stuck on its CPU (a data loader, a lock) from a rank that left its
//! loop early and ended: both issued nothing after their last collective, and it completed.
//! The log can. When a peer's process exits, Gloo fails the ranks blocked on it with
//! "Connection closed by peer" (NCCL with "remote process exited"); when a rank only hangs,
//! its peers time out instead. So a stall reads as ranks that ended short ([`ended_short`])
//! only when the log shows all of:
//!
//! - every rank the dumps show waiting failed because a peer's process exited, and no rank
//!   timed out: in a true stall the first waiter to fail times out, and its own exit is what
//!   the later waiters see close, so one timeout anywhere keeps the stall;
//! - no rank raised an error of its own (a crash, `merge::upgrade`'s business, and an exit
//!   that would explain the closed connections as well);
//! - each culprit has lines of its own in the log and none of them is a failure: no
//!   traceback, no watchdog line, and, where torchrun's failure table is in the log, no entry
//!   with a signal or a non-zero exit code (a rank killed by the OOM killer ends short too,
//!   but crashed);
//! - in the dumps, each culprit's last collective completed.
//!
//! The verdict then is a divergence of the culprits: they skipped collectives their peers
//! issued, the counts per group show it, and no seq is named when the dumps show none where
//! the ranks' collectives differ (they paired one for one until one side ran out). The bridge
//! then looks for the guarded jump that makes a rank issue fewer collectives in the loop the
//! others wait in (`bridge/exits.rs`), not at the call the culprits never reached.

use super::traceback::peer_exited;
use super::verdict::ClaimKind;
use super::{Cite, LogAnalysis};
use crate::diagnose::{Category, Diagnosis, Position};
use crate::model::{RankSet, Trace};

/// Cites kept per kind of evidence (a 1,000-rank job has 1,000 alike).
const CITES: usize = 4;

/// Makes a stall whose culprits the log shows ended (see the module's rules) a divergence of
/// those ranks; returns what changed, `None` (and the verdict untouched) when any rule fails.
pub fn ended_short(
    trace: &Trace,
    d: &mut Diagnosis,
    log: &LogAnalysis,
) -> Option<super::merge::Upgrade> {
    if d.category != Category::Stall || d.missing_p2p.is_some() || d.culprit_ranks.is_empty() {
        return None;
    }
    let e = &log.evidence;
    if log.verdict.claims.iter().any(|c| c.kind == ClaimKind::Raised) || !e.nccl.timeouts.is_empty()
    {
        return None;
    }
    // Every failure in the log is a peer's exit seen from a rank the dumps show waiting.
    let waiters: RankSet = d
        .groups
        .iter()
        .filter(|g| g.stuck && !g.culprit)
        .flat_map(|g| g.ranks.as_slice().to_vec())
        .collect();
    let failures: Vec<_> = e.tracebacks.iter().filter(|t| t.symptom.is_some()).collect();
    if waiters.is_empty()
        || failures.iter().any(|t| !peer_exited(&t.exception))
        || !waiters.as_slice().iter().all(|&w| failures.iter().any(|t| t.rank == Some(w)))
    {
        return None;
    }
    let culprits = d.culprit_ranks.clone();
    let own_failure = |r: u32| {
        e.tracebacks.iter().any(|t| t.rank == Some(r))
            || e.nccl.watchdog_errors.iter().any(|w| w.rank == Some(r))
            || e.failures
                .exits
                .iter()
                .any(|x| x.rank == r && (x.signal.is_some() || x.exit_code != Some(0)))
    };
    let completed = |r: u32| {
        d.groups.iter().filter(|g| g.ranks.contains(r)).all(|g| match &g.position {
            Position::At(at) => at.completed != Some(false),
            Position::Idle => true,
            Position::NoDump => false,
        })
    };
    if !culprits
        .as_slice()
        .iter()
        .all(|&r| e.ranks_seen.contains(&r) && !own_failure(r) && completed(r))
    {
        return None;
    }

    let from_headline = d.headline.clone();
    let counts = fewer_counts(trace, d, &culprits);
    let exits: Vec<Cite> = failures.iter().take(CITES).map(|t| t.cite.clone()).collect();
    d.evidence.push(format!(
        "the dumps alone read stall: {from_headline} — a dump cannot tell a rank stuck on its CPU from one that ended"
    ));
    d.evidence.extend(counts.iter().cloned());
    d.evidence.push(format!(
        "the log: rank(s) {} failed because a peer's process exited{}, no rank timed out or raised, and rank(s) {} logged no failure of their own: they ended, they are not stuck",
        waiters.brief(),
        exits.first().map(|c| format!(" ({}:{})", c.file, c.line)).unwrap_or_default(),
        culprits.brief()
    ));
    let waiting = d
        .groups
        .iter()
        .find(|g| g.stuck && !g.culprit)
        .map(|g| crate::diagnose::describe_wait(trace, g))
        .unwrap_or_default();
    d.headline = format!(
        "rank(s) {} ended their run having issued fewer collectives than their peers ({}): they skipped collectives the others issued, and rank(s) {} wait in {waiting} and failed when they left; the dumps show no seq where the ranks' collectives differ",
        culprits.brief(),
        counts.first().map_or("see the evidence", String::as_str),
        waiters.brief()
    );
    d.category = Category::Divergence;
    d.collective_seq_id = None;
    d.ended_short = true;
    Some(super::merge::Upgrade {
        from: Category::Stall.as_str(),
        to: Category::Divergence.as_str(),
        from_headline,
        culprit_ranks: culprits.as_slice().to_vec(),
        not_in_log: Vec::new(),
        evidence: exits,
    })
}

/// Per process group the waiters wait in: how far the culprits' collectives went there
/// against the waiters', from the dumps' entries (the newest seq each rank holds).
fn fewer_counts(trace: &Trace, d: &Diagnosis, culprits: &RankSet) -> Vec<String> {
    let last_seq = |rank: u32, pg: usize| -> Option<u64> {
        let name = &trace.process_groups[pg].name;
        trace
            .rank(rank)?
            .entries
            .iter()
            .filter(|x| x.pg_name() == name)
            .map(|x| x.collective_seq_id)
            .max()
    };
    let mut out = Vec::new();
    for g in d.groups.iter().filter(|g| g.stuck && !g.culprit) {
        let Position::At(at) = &g.position else { continue };
        let behind: RankSet =
            g.waiting_for.as_slice().iter().copied().filter(|&r| culprits.contains(r)).collect();
        let Some(&first) = behind.as_slice().first() else { continue };
        let issued = last_seq(first, at.pg).unwrap_or(0);
        let text = format!(
            "in {} rank(s) {} issued up to seq {issued} and rank(s) {} up to seq {}",
            trace.process_groups[at.pg].label(),
            behind.brief(),
            g.ranks.brief(),
            at.seq
        );
        if !out.contains(&text) {
            out.push(text);
        }
    }
    out
}
