//! `ProcessGroupNCCL`'s own lines: the watchdog's timed-out work, each group's progress, the
//! dump signal, and the desync-debug report. Wordings of torch 1.x to 2.x, all seen in pasted
//! logs (tests/logs):
//!
//! - `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE,
//!   NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for ...` (torch 1.x has no
//!   Numel fields), and `Work WorkNCCL(...) timed out in blocking wait.`;
//! - progress, per group: `[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or
//!   timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed
//!   NCCL work: 807.`, `[PG 1 Rank 0] Timeout at NCCL work: ...`, `[PG ID 1 PG GUID 1 Rank 0]
//!   failure detected by watchdog at work sequence id: 2847 PG status: last enqueued work:
//!   2855, last completed work: 2846`;
//! - `Received a dump signal due to a collective timeout from this local rank` / `from rank 1`;
//! - `TORCH_NCCL_DESYNC_DEBUG`'s report: `[7] finished collective #182, but didn't join
//!   collective #183`, `[3] joined but didn't finish collective #40`.
//!
//! The `WorkNCCL` line names no group; the same rank's progress line for the same seq does.

use super::Cite;
use super::lines::{Record, split_digits};

/// A process group as a log names it. Two lines are in the same group only when their labels
/// are equal: `GUID` when the line has one (torch ≥ 2.5; `PG ID` is per rank and two groups
/// can share it), else the `PG` number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupName {
    pub label: String,
    /// `default_pg`, or what the job passed as `group_desc`; empty when the line has none.
    pub desc: String,
}

/// A collective the watchdog reported timed out on one rank.
#[derive(Debug, Clone)]
pub struct TimedOut {
    pub rank: Option<u32>,
    pub seq: u64,
    pub op: Option<String>,
    pub numel_in: Option<u64>,
    pub numel_out: Option<u64>,
    pub timeout_ms: Option<u64>,
    /// From the same rank's progress line for the same seq, when there is exactly one.
    pub group: Option<GroupName>,
    pub cite: Cite,
}

/// One rank's progress in one group when its watchdog fired.
#[derive(Debug, Clone)]
pub struct GroupProgress {
    pub rank: Option<u32>,
    pub group: Option<GroupName>,
    /// The work the watchdog failed at.
    pub failed_seq: Option<u64>,
    pub last_enqueued: Option<i64>,
    pub last_completed: Option<i64>,
    pub cite: Cite,
}

/// `Received a dump signal ... from rank N`: which rank's watchdog fired first.
#[derive(Debug, Clone)]
pub struct DumpSignal {
    pub rank: Option<u32>,
    pub first_to_time_out: Option<u32>,
    pub cite: Cite,
}

/// A line of torch's desync-debug report naming ranks that lagged, died or went elsewhere.
#[derive(Debug, Clone)]
pub struct DesyncNamed {
    pub ranks: Vec<u32>,
    pub cite: Cite,
}

/// The watchdog ended on an error that is not a timeout (`CUDA error: an illegal memory
/// access was encountered`): that rank's own failure.
#[derive(Debug, Clone)]
pub struct WatchdogError {
    pub rank: Option<u32>,
    pub message: String,
    pub cite: Cite,
}

#[derive(Debug, Default)]
pub struct NcclLines {
    pub timeouts: Vec<TimedOut>,
    pub progress: Vec<GroupProgress>,
    pub dump_signals: Vec<DumpSignal>,
    pub desync_named: Vec<DesyncNamed>,
    pub watchdog_errors: Vec<WatchdogError>,
}

pub fn read(records: &[Record], cite: impl Fn(&Record) -> Cite) -> NcclLines {
    let mut out = NcclLines::default();
    for r in records {
        let body = r.body.as_str();
        if let Some(t) = timed_out(body) {
            let duplicate = out.timeouts.iter().any(|o| o.rank == r.rank && o.seq == t.seq);
            if !duplicate {
                out.timeouts.push(TimedOut { rank: r.rank, cite: cite(r), ..t });
            }
        }
        if let Some(p) = progress(body) {
            out.progress.push(GroupProgress { rank: r.rank, cite: cite(r), ..p });
        }
        // Only torch's watchdog says a dump signal came from a *timeout*; a harness's line
        // about a dump on another rank's abort names no rank that timed out.
        if body.contains("dump signal") && body.contains("timeout") {
            let first = if body.contains("from this local rank") {
                r.rank
            } else {
                number_after(body, "from  rank ")
                    .or_else(|| number_after(body, "from rank "))
                    .map(|n| n as u32)
            };
            out.dump_signals.push(DumpSignal {
                rank: r.rank,
                first_to_time_out: first,
                cite: cite(r),
            });
        }
        if let Some(ranks) = desync_named(body) {
            out.desync_named.push(DesyncNamed { ranks, cite: cite(r) });
        }
        if let Some(message) = watchdog_error(body) {
            out.watchdog_errors.push(WatchdogError { rank: r.rank, message, cite: cite(r) });
        }
    }
    // A WorkNCCL line names no group; the same rank's progress line at the same seq does.
    for t in out.timeouts.iter_mut().filter(|t| t.group.is_none()) {
        let mut groups = out
            .progress
            .iter()
            .filter(|p| p.rank == t.rank && p.failed_seq == Some(t.seq))
            .filter_map(|p| p.group.as_ref());
        if let Some(first) = groups.next()
            && groups.all(|g| g == first)
        {
            t.group = Some(first.clone());
        }
    }
    out
}

fn timed_out(body: &str) -> Option<TimedOut> {
    let reported = body.contains("Watchdog caught collective operation timeout")
        || body.contains("timed out in blocking wait");
    if !reported {
        return None;
    }
    let at = body.find("WorkNCCL(")?;
    let work = &body[at..];
    // `[PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog
    // caught ... WorkNCCL(...)` (the watchdog's own exception, printed by `what():` or the
    // watchdog's error line): the group bracket in front of the work is the work's group.
    let group = pg_bracket(&body[..at]).map(|(g, _)| g);
    Some(TimedOut {
        rank: None,
        seq: number_after(work, "SeqNum=")?,
        op: word_after(work, "OpType="),
        // NCCL writes -1 as an unsigned 64-bit number for coalesced work: not a size.
        numel_in: number_after(work, "NumelIn=").filter(|&n| n != u64::MAX),
        numel_out: number_after(work, "NumelOut=").filter(|&n| n != u64::MAX),
        timeout_ms: number_after(work, "Timeout(ms)="),
        group,
        cite: Cite::default(),
    })
}

fn progress(body: &str) -> Option<GroupProgress> {
    let lower = body.to_ascii_lowercase();
    let enqueued = signed_after(&lower, "last enqueued nccl work: ")
        .or_else(|| signed_after(&lower, "last enqueued work: "));
    let completed = signed_after(&lower, "last completed nccl work: ")
        .or_else(|| signed_after(&lower, "last completed work: "));
    if enqueued.is_none() && completed.is_none() {
        return None;
    }
    let failed_seq = number_after(body, "detected by watchdog at work: ")
        .or_else(|| number_after(body, "Timeout at NCCL work: "))
        .or_else(|| number_after(body, "at work sequence id: "))
        // A wrapped `detected` / `by watchdog` joined without its space.
        .or_else(|| number_after(body, "by watchdog at work: "));
    let group = pg_bracket(body).map(|(g, _)| g);
    Some(GroupProgress {
        rank: None,
        group,
        failed_seq,
        last_enqueued: enqueued,
        last_completed: completed,
        cite: Cite::default(),
    })
}

/// `[PG ID 0 PG GUID 0(default_pg) Rank 1]`, `[PG 0 (default_pg) Rank 12]`, `[PG 1 Rank 0]`:
/// the group and the rank in it.
pub fn pg_bracket(body: &str) -> Option<(GroupName, u32)> {
    let start = body.find("[PG ")?;
    let inside = &body[start + 1..];
    let inside = &inside[..inside.find(']')?];
    let rank = number_after(inside, "Rank ")? as u32;
    let desc = inside
        .find('(')
        .and_then(|open| inside[open + 1..].split_once(')').map(|(d, _)| d.to_owned()))
        .unwrap_or_default();
    let label = if let Some(guid) = number_after(inside, "GUID ") {
        format!("GUID {guid}")
    } else {
        let id = number_after(inside, "PG ID ").or_else(|| number_after(inside, "PG "))?;
        format!("PG {id}")
    };
    Some((GroupName { label, desc }, rank))
}

fn desync_named(body: &str) -> Option<Vec<u32>> {
    let named = body.contains("but didn't join collective #")
        || body.contains("joined but didn't finish collective #");
    if !named {
        return None;
    }
    let open = body.find('[')?;
    let close = open + body[open..].find(']')?;
    let ranks: Option<Vec<u32>> =
        body[open + 1..close].split(',').map(|r| r.trim().parse().ok()).collect();
    ranks.filter(|r| !r.is_empty())
}

fn watchdog_error(body: &str) -> Option<String> {
    const MARK: &str = "watchdog thread terminated with exception: ";
    let message = &body[body.find(MARK)? + MARK.len()..];
    let timeout = message.contains("Watchdog caught collective operation timeout")
        || message.contains("timed out");
    (!timeout).then(|| message.trim().to_owned())
}

pub fn number_after(s: &str, key: &str) -> Option<u64> {
    let at = s.find(key)? + key.len();
    split_digits(&s[at..])?.0.parse().ok()
}

fn signed_after(s: &str, key: &str) -> Option<i64> {
    let rest = &s[s.find(key)? + key.len()..];
    let (sign, rest) = match rest.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, rest),
    };
    Some(sign * split_digits(rest)?.0.parse::<i64>().ok()?)
}

fn word_after(s: &str, key: &str) -> Option<String> {
    let rest = &s[s.find(key)? + key.len()..];
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::lines::records;

    fn read_text(text: &str) -> NcclLines {
        read(&records(0, text), |r| Cite {
            file: String::new(),
            line: r.line,
            text: r.body.clone(),
        })
    }

    #[test]
    fn timeout_takes_its_group_from_the_progress_line() {
        let n = read_text(
            "[rank5]:[E1 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=31, OpType=ALLGATHER, NumelIn=4, NumelOut=16, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n\
             [rank5]:[E1 ProcessGroupNCCL.cpp:1785] [PG ID 3 PG GUID 17(tp) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 31, last enqueued NCCL work: 33, last completed NCCL work: 30.\n",
        );
        let t = &n.timeouts[0];
        assert_eq!((t.rank, t.seq, t.op.as_deref()), (Some(5), 31, Some("ALLGATHER")));
        assert_eq!((t.numel_in, t.numel_out), (Some(4), Some(16)));
        let g = t.group.as_ref().unwrap();
        assert_eq!((g.label.as_str(), g.desc.as_str()), ("GUID 17", "tp"));
        let p = &n.progress[0];
        assert_eq!(
            (p.failed_seq, p.last_enqueued, p.last_completed),
            (Some(31), Some(33), Some(30))
        );
    }

    #[test]
    fn old_and_new_wordings() {
        let n = read_text(
            "[E ProcessGroupNCCL.cpp:9] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=BROADCAST, Timeout(ms)=5) ran for 6 milliseconds before timing out.\n\
             [rank1]:[E1 ProcessGroupNCCL.cpp:2268] [PG ID 1 PG GUID 1 Rank 1]  failure detected by watchdog at work sequence id: 12 PG status: last enqueued work: 12, last completed work: -1\n\
             [rank1]:[E1 ProcessGroupNCCL.cpp:1] [Rank 1] Work WorkNCCL(SeqNum=1, OpType=COALESCED, NumelIn=18446744073709551615, NumelOut=18446744073709551615, Timeout(ms)=9) timed out in blocking wait.\n",
        );
        assert_eq!(n.timeouts[0].rank, Some(2));
        assert_eq!(n.timeouts[0].numel_in, None);
        assert_eq!(n.progress[0].last_completed, Some(-1));
        assert_eq!(n.progress[0].failed_seq, Some(12));
        assert_eq!(n.timeouts[1].numel_in, None, "-1 as u64 is no size");
    }

    #[test]
    fn dump_signal_and_desync_report() {
        let n = read_text(
            "[rank0]:[E1 x] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump signal due to a collective timeout from  rank 3 and we will try\n\
             [rank3]:[E1 x] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a collective timeout from this local rank and we\n\
             \t   [4, 6] finished collective #9, but didn't join collective #10 (count from 1)\n",
        );
        assert_eq!(n.dump_signals[0].first_to_time_out, Some(3));
        assert_eq!(n.dump_signals[1].first_to_time_out, Some(3));
        assert_eq!(n.desync_named[0].ranks, vec![4, 6]);
    }

    #[test]
    fn groups_compare_by_guid_not_by_per_rank_id() {
        let (a, _) = pg_bracket("[PG ID 11 PG GUID 119 Rank 1]").unwrap();
        let (b, _) = pg_bracket("[PG ID 11 PG GUID 112 Rank 0]").unwrap();
        assert_ne!(a, b);
        let (c, r) = pg_bracket("[PG 0 (default_pg) Rank 12] x").unwrap();
        assert_eq!((c.label.as_str(), c.desc.as_str(), r), ("PG 0", "default_pg", 12));
    }

    #[test]
    fn a_watchdog_error_that_is_no_timeout() {
        let n = read_text(
            "[rank3]:[E x ProcessGroupNCCL.cpp:1414] [PG 2 Rank 3] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n",
        );
        assert_eq!(n.watchdog_errors[0].rank, Some(3));
        let n = read_text(
            "[rank3]:[E x] [PG 2 Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 9 milliseconds before timing out.\n",
        );
        assert!(n.watchdog_errors.is_empty());
        assert_eq!(n.timeouts.len(), 1);
    }

    #[test]
    fn a_timeout_inside_the_watchdogs_exception_keeps_the_group_in_front_of_it() {
        // std::terminate's `what():` line: no launcher prefix, the group bracket before the
        // embedded `[Rank N] Watchdog caught ...` (shape of our own: group 4, rank 2, seq 61).
        let n = read_text(
            "  what():  [PG 4 Rank 2] Process group watchdog thread terminated with exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=61, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=100) ran for 101 milliseconds before timing out.\n",
        );
        let t = &n.timeouts[0];
        assert_eq!((t.rank, t.seq), (Some(2), 61));
        assert_eq!(t.group.as_ref().map(|g| g.label.as_str()), Some("PG 4"));
        // A plain `[Rank N] Watchdog caught` line still names no group by itself.
        let n = read_text(
            "[rank1]:[E1 x] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE) ran for 9 milliseconds before timing out.\n",
        );
        assert!(n.timeouts[0].group.is_none());
    }
}
