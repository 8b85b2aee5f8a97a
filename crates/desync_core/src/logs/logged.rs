//! Errors a rank's own logger wrote (`logging.error(...)`, `log.critical(...)`): a rank that
//! logs a fatal error and ends with `sys.exit(2)` leaves no traceback, only that record.
//!
//! A record counts when one of its first words is a level name at error severity, in the
//! spellings Python's `logging` formats and common wrappers produce: `ERROR:name:msg`
//! (basicConfig's default), `ERROR name: msg`, `[ERROR] msg`, `2024-.. - name - ERROR - msg`,
//! `| ERROR | msg` (loguru). Glog's `E1128 ...` lines are torch's C++ logging, mostly a
//! waiter's symptoms, and are not read here. Whether such a record ended the rank is the
//! verdict's call (`verdict::logged_exit_claims`): on its own, an error record is only a line.

use super::Cite;
use super::lines::Record;
use super::traceback::symptom_of;

/// Level names at error severity.
const ERROR_LEVELS: &[&str] = &["ERROR", "CRITICAL", "FATAL"];

/// How far into the record a level name may be found (a timestamp, a logger name, a
/// process tag come first in common formats).
const LEVEL_WITHIN_CHARS: usize = 64;

#[derive(Debug, Clone)]
pub struct LoggedError {
    pub rank: Option<u32>,
    /// The record's text, trimmed.
    pub message: String,
    /// The record is the C++ runtime's `terminate called after throwing`: the process ended
    /// there (`std::terminate` aborts it), so it is the rank's fatal end, not a line a job
    /// may log and carry on after.
    pub fatal: bool,
    pub cite: Cite,
}

/// Error-level records that are not a waiter's symptom (a timeout or a closed socket logged
/// at ERROR is still a waiter's).
pub fn read(records: &[Record], cite: impl Fn(&Record) -> Cite) -> Vec<LoggedError> {
    let mut found = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let (message, fatal) = if let Some(ended) = terminated(records, i) {
            (ended, true)
        } else if is_error_record(&r.body) {
            (r.body.trim().to_owned(), false)
        } else {
            continue;
        };
        if symptom_of(&message).is_none() {
            found.push(LoggedError { rank: r.rank, message, fatal, cite: cite(r) });
        }
    }
    found
}

/// The C++ runtime's last words for a process an uncaught exception ended
/// (`terminate called after throwing an instance of 'gloo::EnforceNotMet'`), with the
/// exception's `what():` text from the same rank's next line: Gloo aborts a rank this way
/// when a peer's message is larger than the receive it posted (a size its peer disagrees on).
fn terminated(records: &[Record], i: usize) -> Option<String> {
    let r = &records[i];
    let head = r.body.trim();
    if !head.starts_with(TERMINATE) {
        return None;
    }
    let what = records[i + 1..]
        .iter()
        .find(|n| n.rank == r.rank)
        .map(|n| n.body.trim())
        .filter(|n| n.starts_with("what():"));
    Some(match what {
        Some(what) => format!("{head}: {what}"),
        None => head.to_owned(),
    })
}

/// How the C++ runtime announces `std::terminate` on an uncaught exception.
const TERMINATE: &str = "terminate called after throwing";

fn is_error_record(body: &str) -> bool {
    let head = body.trim_start();
    let head = &head[..head.char_indices().nth(LEVEL_WITHIN_CHARS).map_or(head.len(), |(i, _)| i)];
    ERROR_LEVELS.iter().any(|level| {
        head.match_indices(level).any(|(at, _)| {
            let before = head[..at].trim_end();
            let after = head[at + level.len()..].trim_start();
            let word = !before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
                && !head[at + level.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
            // A level is set apart by the format: first in the line, or next to its
            // punctuation (`[ERROR]`, `- ERROR -`, `| ERROR |`, `ERROR:`), never inside prose.
            word && (before.is_empty()
                || before.ends_with(['[', '|', ':', '-', '('])
                || after.starts_with([':', ']', '|', '-', ')']))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank the C++ runtime ended on an uncaught exception counts as its own error, with
    /// the exception's text; a watchdog's timeout ending the same way stays a waiter's.
    #[test]
    fn a_terminate_on_an_uncaught_exception_is_the_ranks_own_error() {
        let text = "\
[rank5]: step 3 done
[rank5]: terminate called after throwing an instance of 'gloo::EnforceNotMet'
[rank5]:   what():  [enforce fail at gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 96 vs 8. Received data size doesn't match expected size.
[rank6]: terminate called after throwing an instance of 'c10::DistBackendError'
[rank6]:   what():  [PG 0 Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)
";
        let records = crate::logs::lines::records(0, text);
        let found = read(&records, |_| Cite::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rank, Some(5));
        assert!(found[0].fatal, "std::terminate ends the process");
        assert!(found[0].message.contains("Received data size"), "{}", found[0].message);
    }

    #[test]
    fn logging_formats_at_error_severity() {
        for line in [
            "ERROR:churn:fatal: window 2 has 1 invalid labels",
            "ERROR churn: fatal: window 2 has 1 invalid labels",
            "[ERROR] shard 7 is empty",
            "2025-02-18 12:54:01,123 - trainer - CRITICAL - out of disk",
            "12:54:01 | ERROR    | data:check:40 - bad record",
        ] {
            assert!(is_error_record(line), "{line}");
        }
        for line in [
            "INFO:churn:step 10 ok",
            "the loader reported an ERROR rate of 0.1 percent in the last window",
            "E1128 12:00:00.1 ProcessGroupGloo.cpp:123] error",
            "errors: 0",
        ] {
            assert!(!is_error_record(line), "{line}");
        }
    }
}
