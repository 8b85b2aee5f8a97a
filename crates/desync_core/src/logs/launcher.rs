//! torchrun's failure table (`torch.distributed.elastic`'s `ChildFailedError`):
//!
//! ```text
//! Failures:
//! [1]:
//!   rank      : 1 (local_rank: 1)
//!   exitcode  : -15 (pid: 17746)
//!   traceback : Signal 15 (SIGTERM) received by PID 17746
//! Root Cause (first observed failure):
//! [0]:
//!   rank      : 2 (local_rank: 2)
//!   exitcode  : 1 (pid: 17748)
//! ====
//! ```
//!
//! An entry without its `rank` line (the paste starts mid-entry) is dropped: its exit code
//! belongs to no rank we can name. "Root cause" is only torchrun's *first observed* failure.

use super::Cite;
use super::lines::Record;

#[derive(Debug, Clone)]
pub struct Exit {
    pub rank: u32,
    pub local_rank: Option<u32>,
    /// Negative: killed by that signal number.
    pub exit_code: Option<i32>,
    /// `SIGABRT`, `SIGTERM`, ... from the `traceback` field.
    pub signal: Option<String>,
    /// Listed under `Root Cause (first observed failure)`.
    pub first_observed: bool,
    pub cite: Cite,
}

#[derive(Debug, Default)]
pub struct FailureTable {
    pub exits: Vec<Exit>,
    /// The table's closing rule was seen after its entries: no entry was cut off the end.
    pub complete: bool,
}

pub fn read(records: &[Record], cite: impl Fn(&Record) -> Cite) -> FailureTable {
    let mut table = FailureTable::default();
    let mut in_table = false;
    let mut root_cause = false;
    let mut current: Option<Exit> = None;
    for r in records {
        let body = r.body.trim();
        if body.starts_with("Failures:") {
            in_table = true;
            continue;
        }
        if body.starts_with("Root Cause") {
            in_table = true;
            root_cause = true;
            table.exits.extend(current.take());
            continue;
        }
        if !in_table && !body.starts_with("rank ") {
            continue;
        }
        if is_entry_index(body) || body.starts_with("----") {
            table.exits.extend(current.take());
            continue;
        }
        if body.starts_with("====") {
            table.exits.extend(current.take());
            if root_cause {
                table.complete = true;
                in_table = false;
            }
            continue;
        }
        let Some((field, value)) = body.split_once(':') else { continue };
        let value = value.trim();
        match field.trim() {
            "rank" => {
                // `rank      : 1 (local_rank: 1)`; a table whose header was cut starts here.
                let Some((digits, rest)) = super::lines::split_digits(value) else { continue };
                let Ok(rank) = digits.parse() else { continue };
                let Some(local_rank) = super::nccl::number_after(rest, "local_rank: ") else {
                    continue;
                };
                table.exits.extend(current.take());
                in_table = true;
                let local_rank = Some(local_rank as u32);
                current = Some(Exit {
                    rank,
                    local_rank,
                    exit_code: None,
                    signal: None,
                    first_observed: root_cause,
                    cite: cite(r),
                });
            }
            "exitcode" => {
                if let Some(exit) = &mut current {
                    exit.exit_code = value.split_whitespace().next().and_then(|c| c.parse().ok());
                }
            }
            "traceback" => {
                if let Some(exit) = &mut current {
                    exit.signal = value
                        .split(['(', ')'])
                        .find(|part| part.starts_with("SIG"))
                        .map(str::to_owned);
                }
            }
            _ => {}
        }
    }
    table.exits.extend(current);
    // The same rank twice (a table pasted twice) counts once.
    let mut seen = Vec::new();
    table.exits.retain(|e| {
        let new = !seen.contains(&e.rank);
        seen.push(e.rank);
        new
    });
    table
}

fn is_entry_index(body: &str) -> bool {
    body.strip_prefix('[')
        .and_then(super::lines::split_digits)
        .is_some_and(|(_, rest)| rest == "]:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logs::lines::records;

    #[test]
    fn entries_signals_and_root_cause() {
        let text = "Failures:\n[1]:\n  time      : t\n  rank      : 5 (local_rank: 1)\n  exitcode  : -6 (pid: 3)\n  error_file: <N/A>\n  traceback : Signal 6 (SIGABRT) received by PID 3\n\
                    ----\nRoot Cause (first observed failure):\n[0]:\n  rank      : 4 (local_rank: 0)\n  exitcode  : 1 (pid: 2)\n  traceback : To enable traceback see: https://x\n====\n";
        let t = read(&records(0, text), |r| Cite {
            file: String::new(),
            line: r.line,
            text: r.body.clone(),
        });
        assert!(t.complete);
        assert_eq!(t.exits.len(), 2);
        let a = &t.exits[0];
        assert_eq!(
            (a.rank, a.local_rank, a.exit_code, a.signal.as_deref(), a.first_observed),
            (5, Some(1), Some(-6), Some("SIGABRT"), false)
        );
        let b = &t.exits[1];
        assert_eq!(
            (b.rank, b.exit_code, b.signal.as_deref(), b.first_observed),
            (4, Some(1), None, true)
        );
    }

    #[test]
    fn an_entry_cut_at_its_head_is_dropped() {
        let text = "  exitcode  : -6 (pid: 3437)\n  traceback : Signal 6 (SIGABRT) received by PID 3437\n[7]:\n  rank      : 7 (local_rank: 7)\n  exitcode  : -6 (pid: 3438)\n";
        let t = read(&records(0, text), |r| Cite {
            file: String::new(),
            line: r.line,
            text: r.body.clone(),
        });
        assert_eq!(t.exits.iter().map(|e| e.rank).collect::<Vec<_>>(), vec![7]);
        assert!(!t.complete, "no closing rule: the end may be cut");
    }
}
