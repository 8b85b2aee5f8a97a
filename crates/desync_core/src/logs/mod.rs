//! Logs as evidence: most hangs come with a job's log and no dumps. This module reads what a
//! log can show — per rank and process group, the collective the watchdog timed out in and the
//! last enqueued/completed seq; the ranks that raised, with their traceback's user line;
//! torchrun's failure table; torch's desync-debug report — and gives a verdict only as strong
//! as those lines support ([`verdict`]): each claim cites the line it rests on.
//!
//! Invariants:
//! - seqs compare only within one named process group: a line that names no group is never
//!   aligned against another rank's;
//! - a rank absent from the log is never a culprit (a paste is cut more often than a rank is
//!   missing); a rank that timed out, or was aborted, is a waiter;
//! - a log is told from a dump by content ([`looks_like_log`]), never by name.

pub mod ended;
pub mod launcher;
pub mod lines;
pub mod logged;
pub mod merge;
pub mod nccl;
pub mod report;
pub mod traceback;
pub mod verdict;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::Error;
pub use verdict::{Claim, ClaimKind, LogVerdict};

/// A log line a claim rests on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Cite {
    /// The log file as given.
    pub file: String,
    /// 1-based line number (of a wrapped message's first line).
    pub line: usize,
    /// The line after its prefixes, cut at [`CITE_CHARS`] characters.
    pub text: String,
}

/// Longest quoted text of a line: NCCL's messages run past 600 characters.
pub const CITE_CHARS: usize = 300;

/// What the logs show, parsed; no judgement yet.
#[derive(Debug, Default)]
pub struct LogEvidence {
    pub files: Vec<PathBuf>,
    pub lines: usize,
    /// Ranks with a line of their own (prefix, NCCL message, failure table entry).
    pub ranks_seen: Vec<u32>,
    pub nccl: nccl::NcclLines,
    pub tracebacks: Vec<traceback::Traceback>,
    /// Error-level records of the ranks' own loggers ([`logged`]).
    pub logged_errors: Vec<logged::LoggedError>,
    pub failures: launcher::FailureTable,
}

/// A log's analysis: its evidence, the verdict and the claims behind it, what to do next.
#[derive(Debug)]
pub struct LogAnalysis {
    pub evidence: LogEvidence,
    pub verdict: LogVerdict,
    /// Read because it was found in the dump directory, not named with `--log`.
    pub found_beside: bool,
    /// With dumps: how the log changed their verdict ([`merge::upgrade`]).
    pub upgrade: Option<merge::Upgrade>,
}

/// Whether a file's first bytes are a text log rather than a dump or a summary: no NUL byte,
/// not pickle (protocol byte 0x80), gzip, a JSON object, or desync's summary magic.
pub fn looks_like_log(head: &[u8]) -> bool {
    let start = head.iter().position(|b| !b.is_ascii_whitespace()).map_or(&[][..], |i| &head[i..]);
    !head.is_empty()
        && !head.contains(&0)
        && !matches!(start.first(), Some(0x80 | b'{'))
        && !head.starts_with(&[0x1f, 0x8b])
        && !head.starts_with(crate::summary::MAGIC)
}

/// Reads and parses log files. A file that cannot be read ends the run (the user named it).
pub fn read(paths: &[PathBuf]) -> Result<LogEvidence, Error> {
    let mut texts = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes =
            std::fs::read(path).map_err(|source| Error::Io { path: path.clone(), source })?;
        texts.push((path.clone(), String::from_utf8_lossy(&bytes).into_owned()));
    }
    Ok(parse(&texts))
}

/// Parses logs given as (name, text).
pub fn parse(texts: &[(PathBuf, String)]) -> LogEvidence {
    let mut records = Vec::new();
    let mut lines_total = 0;
    for (index, (path, text)) in texts.iter().enumerate() {
        let mut file_records = lines::records(index, text);
        lines_total += text.lines().count();
        // A per-rank file (`rank_3.log`) whose lines carry no rank of their own: desync's
        // naming rule for dumps (a trailing rank number) holds for it too.
        if !file_records.iter().any(|r| r.prefixed)
            && let Some(rank) = per_rank_file(path)
        {
            for r in &mut file_records {
                r.rank = Some(rank);
            }
        }
        records.extend(file_records);
    }
    let names: Vec<String> = texts.iter().map(|(p, _)| p.display().to_string()).collect();
    let cite = |r: &lines::Record| Cite {
        file: names[r.file].clone(),
        line: r.line,
        text: clip(r.body.trim()),
    };
    let nccl = nccl::read(&records, cite);
    let tracebacks = traceback::read(&records, cite);
    let logged_errors = logged::read(&records, cite);
    let failures = launcher::read(&records, cite);
    let mut ranks_seen: Vec<u32> = records
        .iter()
        .filter_map(|r| r.rank)
        .chain(failures.exits.iter().map(|e| e.rank))
        .collect();
    ranks_seen.sort_unstable();
    ranks_seen.dedup();
    LogEvidence {
        files: texts.iter().map(|(p, _)| p.clone()).collect(),
        lines: lines_total,
        ranks_seen,
        nccl,
        tracebacks,
        logged_errors,
        failures,
    }
}

/// Parses and judges.
pub fn analyze(paths: &[PathBuf]) -> Result<LogAnalysis, Error> {
    let evidence = read(paths)?;
    let verdict = verdict::decide(&evidence);
    Ok(LogAnalysis { evidence, verdict, found_beside: false, upgrade: None })
}

impl LogEvidence {
    /// Whether anything desync reads was found (else the file is no log of a job it knows).
    pub fn is_empty(&self) -> bool {
        self.nccl.timeouts.is_empty()
            && self.nccl.progress.is_empty()
            && self.nccl.dump_signals.is_empty()
            && self.nccl.desync_named.is_empty()
            && self.nccl.watchdog_errors.is_empty()
            && self.tracebacks.is_empty()
            && self.failures.exits.is_empty()
            // A plain error record is only a line; a rank's fatal end is evidence.
            && !self.logged_errors.iter().any(|l| l.fatal)
    }
}

/// `rank_3.log`, `trainer-rank3.txt`, `rank3`: the rank a per-rank log's name gives.
fn per_rank_file(path: &Path) -> Option<u32> {
    let stem = path.file_stem()?.to_str()?.to_ascii_lowercase();
    let digits_start = stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let head = stem[..digits_start].trim_end_matches(['_', '-', '.']);
    (head.ends_with("rank") && digits_start < stem.len())
        .then(|| stem[digits_start..].parse().ok())?
}

pub(crate) fn clip(s: &str) -> String {
    match s.char_indices().nth(CITE_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_told_from_dumps_by_content() {
        assert!(looks_like_log(b"[rank0]:[E1 x] Watchdog caught"));
        assert!(looks_like_log(b"Traceback (most recent call last):\n"));
        assert!(!looks_like_log(b"\x80\x04\x95 pickle"));
        assert!(!looks_like_log(b"  {\"version\": \"2.10\"}"));
        assert!(!looks_like_log(b"\x1f\x8b\x08 gzip"));
        assert!(!looks_like_log(b"desync-summary 1\n"));
        assert!(!looks_like_log(b"text\0with a NUL"));
        assert!(!looks_like_log(b""));
    }

    /// A rank that logs an error and calls `sys.exit` leaves no traceback: the record is its
    /// own error when its peers failed on a closed connection; not when nobody saw an exit.
    #[test]
    fn a_logged_error_then_exit_is_the_ranks_own() {
        let waiter = "step 10: holdout accuracy 0.91\nTraceback (most recent call last):\n  \
                      File \"/job/eval.py\", line 14, in holdout\n    dist.all_reduce(stats)\n\
                      RuntimeError: [../gloo/transport/tcp/pair.cc:547] Connection closed by peer [10.0.0.2]:4120\n";
        let exiting = "INFO:shop:step 10 ok\nERROR:shop:fatal: window 2 has 1 invalid labels\n";
        let logs = |second: &str| {
            let texts: Vec<(PathBuf, String)> = [waiter, second, waiter]
                .iter()
                .enumerate()
                .map(|(r, t)| (PathBuf::from(format!("logs/worker_rank{r}.log")), (*t).to_owned()))
                .collect();
            verdict::decide(&parse(&texts))
        };
        let v = logs(exiting);
        assert_eq!(v.category, crate::diagnose::Category::Crash);
        assert_eq!(v.culprit_ranks, vec![1]);
        assert!(v.headline.contains("window 2 has 1 invalid labels"), "{}", v.headline);

        // The same error record, but the peers only timed out: nobody saw a process end.
        let timed_out =
            waiter.replace("Connection closed by peer", "Timed out waiting 5000ms for recv");
        let texts: Vec<(PathBuf, String)> = [timed_out.as_str(), exiting, timed_out.as_str()]
            .iter()
            .enumerate()
            .map(|(r, t)| (PathBuf::from(format!("logs/worker_rank{r}.log")), (*t).to_owned()))
            .collect();
        assert_ne!(verdict::decide(&parse(&texts)).category, crate::diagnose::Category::Crash);
    }

    /// A rank the C++ runtime ended on an exception of its own is a crash on that line alone,
    /// even when its peers' logs show nothing (they were stopped before failing); a terminate
    /// on a waiter's exception (a peer's closed socket) is a victim, and a harness's note of a
    /// dump taken on another rank's abort is no timeout.
    #[test]
    fn a_terminate_on_an_own_exception_is_a_crash_of_that_rank_alone() {
        let quiet =
            "epoch 0 batch 12 ok\n[harness] dump written (dump signal from rank 2: SIGABRT)\n";
        let victim = "epoch 0 batch 12 ok\nterminate called after throwing an instance of 'std::runtime_error'\n  what():  [gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.1.0.7]:51422\n";
        let own = "epoch 0 batch 12 ok\nterminate called after throwing an instance of 'gloo::EnforceNotMet'\n  what():  [enforce fail at gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 1024 vs 512. Received data size doesn't match expected size.\n";
        let texts: Vec<(PathBuf, String)> = [quiet, victim, own, quiet, victim]
            .iter()
            .enumerate()
            .map(|(r, t)| (PathBuf::from(format!("out/worker-rank-{r}.log")), (*t).to_owned()))
            .collect();
        let v = verdict::decide(&parse(&texts));
        assert_eq!(v.category, crate::diagnose::Category::Crash, "{}", v.headline);
        assert_eq!(v.culprit_ranks, vec![2], "{}", v.headline);
        assert!(v.headline.contains("gloo::EnforceNotMet"), "{}", v.headline);
        assert!(
            !v.claims.iter().any(|c| c.kind == ClaimKind::FirstToTimeOut),
            "an abort's dump signal is no timeout: {:?}",
            v.claims
        );
        // Only victims: no crash.
        let texts: Vec<(PathBuf, String)> = [quiet, victim, victim]
            .iter()
            .enumerate()
            .map(|(r, t)| (PathBuf::from(format!("out/worker-rank-{r}.log")), (*t).to_owned()))
            .collect();
        assert_ne!(verdict::decide(&parse(&texts)).category, crate::diagnose::Category::Crash);
    }

    #[test]
    fn per_rank_names() {
        assert_eq!(per_rank_file(Path::new("logs/rank_3.log")), Some(3));
        assert_eq!(per_rank_file(Path::new("trainer-rank12.txt")), Some(12));
        assert_eq!(per_rank_file(Path::new("job_2024.log")), None);
        assert_eq!(per_rank_file(Path::new("rank.log")), None);
    }
}
