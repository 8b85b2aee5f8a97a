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
    pub cite: Cite,
}

/// Error-level records that are not a waiter's symptom (a timeout or a closed socket logged
/// at ERROR is still a waiter's).
pub fn read(records: &[Record], cite: impl Fn(&Record) -> Cite) -> Vec<LoggedError> {
    records
        .iter()
        .filter(|r| is_error_record(&r.body) && symptom_of(&r.body).is_none())
        .map(|r| LoggedError { rank: r.rank, message: r.body.trim().to_owned(), cite: cite(r) })
        .collect()
}

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
