//! A job's log as records: each line stripped of what collectors put in front of it, the rank
//! it belongs to, and a message the terminal wrapped joined back into one record.
//!
//! Who wrote a line, outermost first:
//! - a collector or the paste itself (line numbers, timestamps, Ray's worker tag, a host and
//!   stream tag): [`SOURCE_PREFIXES`], stripped and forgotten;
//! - torchrun's tee: `[default3]:` (role `default`, local rank 3) and torch's own
//!   `[rank3]:` (global rank), in that order when both are there;
//! - the message: NCCL's `[Rank 3]` / `[PG ID 1 PG GUID 1 Rank 3]` name the rank *in that
//!   process group*, which is the global rank only in the default group. It is used only
//!   when the line has no launcher prefix (logs of torch 1.x, or a paste that cut it).

/// One record of a log: a line, or a wrapped message joined back.
#[derive(Debug, Clone)]
pub struct Record {
    /// Index of the log file among those read.
    pub file: usize,
    /// 1-based line number of the record's first line in its file.
    pub line: usize,
    /// The global rank (`[rankN]:`), else the local rank (`[defaultN]:`), else the rank the
    /// NCCL message names; `None` when the line says nothing about its rank.
    pub rank: Option<u32>,
    /// Whether the line carried a launcher prefix (its rank is a process's, not a message's).
    pub prefixed: bool,
    /// The text after the prefixes (one space after a prefix removed, so a traceback keeps
    /// its own indentation).
    pub body: String,
}

/// A collector's or a paste's prefix: strips it and returns the rest, or `None`.
type SourcePrefix = fn(&str) -> Option<&str>;

/// What collectors put before the job's own output, each seen in a real pasted log.
const SOURCE_PREFIXES: &[SourcePrefix] = &[
    // `2025-02-18 12:54 ` or `2025-02-18 12:54:01 ` — a log collector's timestamp.
    |s| {
        let b = s.as_bytes();
        let date = b.len() > 17
            && b[..4].iter().all(u8::is_ascii_digit)
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b' '
            && b[13] == b':';
        if !date {
            return None;
        }
        let rest = &s[16..];
        let rest = rest.strip_prefix(':').map_or(rest, |r| r.get(2..).unwrap_or(r));
        rest.strip_prefix(' ')
    },
    // `(RayWorkerWrapper pid=4009) ` — Ray's tag on a worker's output.
    |s| {
        let rest = s.strip_prefix('(')?;
        let close = rest.find(") ")?;
        rest[..close].contains(" pid=").then(|| &rest[close + 2..])
    },
    // `host.cn-d004 [stderr] ` — a runner that tags each line with its host and stream.
    |s| {
        let (head, rest) = s.split_once(' ')?;
        (!head.starts_with('[')).then_some(())?;
        rest.strip_prefix("[stderr] ").or_else(|| rest.strip_prefix("[stdout] "))
    },
];

/// Splits a log's text into records.
pub fn records(file: usize, text: &str) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let source_free = strip_source_prefixes(raw);
        let (launcher_rank, local_rank, rest) = launcher_prefixes(source_free);
        let prefixed = launcher_rank.is_some() || local_rank.is_some();
        let body = if prefixed { rest.strip_prefix(' ').unwrap_or(rest) } else { rest };
        // An indented line is a block's own (a traceback's code, the desync report's rows).
        let indented = raw.starts_with([' ', '\t']);
        if !prefixed
            && !indented
            && let Some(previous) = out.last_mut()
            && continues(&previous.body, body)
        {
            // The terminal wrapped the message: `...OpTy` / `pe=BROADCAST, ...`, or `timeout: `
            // / `WorkNCCL(...)`. Joined without a separator: a wrap keeps its spaces.
            previous.body.push_str(body);
            continue;
        }
        let rank = launcher_rank.or(local_rank).or_else(|| message_rank(body));
        out.push(Record { file, line: index + 1, rank, prefixed, body: body.to_owned() });
    }
    out
}

fn strip_source_prefixes(mut s: &str) -> &str {
    // `[80746] ` at the very start: the paste numbered its lines (LlamaFactory's issue
    // template). Only at column 0: torch's desync report indents `[7] finished collective`.
    if let Some(rest) =
        s.strip_prefix('[').and_then(split_digits).and_then(|(_, r)| r.strip_prefix("] "))
    {
        s = rest;
    }
    // A pasted block is often indented by the paste; leading blanks are never the job's.
    s = s.trim_start_matches([' ', '\t']);
    // Any order, each at most once (a numbered paste of a timestamped Ray log exists).
    for _ in 0..SOURCE_PREFIXES.len() {
        let Some(rest) = SOURCE_PREFIXES.iter().find_map(|strip| strip(s)) else { break };
        s = rest.trim_start_matches([' ', '\t']);
    }
    s
}

/// `[default3]:` then `[rank3]:`, each optional: (global rank, local rank, rest). A launcher
/// given its own line-prefix template (torchrun's `--log-line-prefix-template`, a cluster
/// launcher's `[host|rank]:`) writes `[<name>|<rank>]:`: the number after the last `|` is the
/// rank the launcher started the process as.
fn launcher_prefixes(s: &str) -> (Option<u32>, Option<u32>, &str) {
    if let Some((n, rest)) = templated_prefix(s) {
        return (Some(n), None, rest);
    }
    let (local, s) = match bracketed_number(s, "[default") {
        Some((n, rest)) => (Some(n), rest),
        None => (None, s),
    };
    match bracketed_number(s, "[rank") {
        Some((n, rest)) => (Some(n), local, rest),
        None => (None, local, s),
    }
}

/// `[<name>|N]:` at the start of `s` (no blank inside the brackets): (N, rest).
fn templated_prefix(s: &str) -> Option<(u32, &str)> {
    let inside = s.strip_prefix('[')?;
    let close = inside.find("]:")?;
    let (name, number) = inside[..close].rsplit_once('|')?;
    let plain = !name.is_empty() && !name.contains([' ', '\t', '[', ']']);
    (plain && number.bytes().all(|b| b.is_ascii_digit()) && !number.is_empty())
        .then(|| Some((number.parse().ok()?, &inside[close + 2..])))?
}

/// `<open>N]:` at the start of `s`: (N, rest).
fn bracketed_number<'a>(s: &'a str, open: &str) -> Option<(u32, &'a str)> {
    let rest = s.strip_prefix(open)?;
    let (digits, rest) = split_digits(rest)?;
    let rest = rest.strip_prefix("]:")?;
    Some((digits.parse().ok()?, rest))
}

/// The rank an NCCL message names: `[Rank 3]`, `[PG 1 Rank 3]`, `[PG ID 0 PG GUID 0(default_pg)
/// Rank 3]`, or the desync report's header `] Rank 0` at the end of the line.
pub fn message_rank(body: &str) -> Option<u32> {
    if let Some(group) = crate::logs::nccl::pg_bracket(body) {
        return Some(group.1);
    }
    let at = body.find("[Rank ")?;
    let (digits, rest) = split_digits(&body[at + 6..])?;
    rest.starts_with(']').then_some(())?;
    digits.parse().ok()
}

/// Whether a line without a prefix is the wrapped rest of the record before it: that record
/// is an NCCL message cut mid-way (no final period) and this line starts like no record does.
fn continues(previous: &str, line: &str) -> bool {
    let nccl = previous.contains("ProcessGroupNCCL") || previous.contains("[Rank ");
    let open = !previous.trim_end().ends_with('.');
    let fresh = line.is_empty()
        || line.starts_with([' ', '\t', '['])
        || line.starts_with("Exception raised")
        || line.starts_with("frame #");
    nccl && open && !fresh
}

/// Leading ASCII digits and the rest; `None` when there are none.
pub fn split_digits(s: &str) -> Option<(&str, &str)> {
    let end = s.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(s.len());
    (end > 0).then(|| s.split_at(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Record {
        records(0, line).remove(0)
    }

    #[test]
    fn launcher_prefixes_in_order() {
        let r = one("[default2]:[rank6]: ValueError: bad shard");
        assert_eq!((r.rank, r.prefixed, r.body.as_str()), (Some(6), true, "ValueError: bad shard"));
        let r = one("[default1]:  File \"a.py\", line 3, in f");
        assert_eq!((r.rank, r.body.as_str()), (Some(1), " File \"a.py\", line 3, in f"));
    }

    #[test]
    fn a_templated_host_and_rank_prefix() {
        let r = one("[node-b7|12]:RuntimeError: Connection closed by peer");
        assert_eq!(
            (r.rank, r.prefixed, r.body.as_str()),
            (Some(12), true, "RuntimeError: Connection closed by peer")
        );
        // Not a prefix: blanks inside, no number after the bar, or no colon after the bracket.
        assert!(!one("[a b|3]: x").prefixed);
        assert!(!one("[host|x]: x").prefixed);
        assert!(!one("[host|3] x").prefixed);
    }

    #[test]
    fn collector_prefixes_are_stripped() {
        let r = one("[912] [rank3]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:607] [Rank 1] x");
        assert_eq!(r.rank, Some(3), "the launcher's global rank wins over the group rank");
        let r = one(" 2025-02-18 12:54 [rank13]:[E218 x] [Rank 1] y");
        assert_eq!(r.rank, Some(13));
        let r = one("(TrainWorker pid=77) [rank5]:[E x] y");
        assert_eq!(r.rank, Some(5));
        let r = one("node-a.cluster [stdout] [rank9]: Traceback (most recent call last):");
        assert_eq!((r.rank, r.body.as_str()), (Some(9), "Traceback (most recent call last):"));
    }

    #[test]
    fn paste_line_numbers_only_at_column_0() {
        let r = one("[12] [rank3]: x");
        assert_eq!((r.rank, r.body.as_str()), (Some(3), "x"));
        let r = one("             [7] finished collective #182, but didn't join collective #183");
        assert!(r.body.starts_with("[7] finished"), "{}", r.body);
    }

    #[test]
    fn message_rank_only_without_a_prefix() {
        let r = one("[E ProcessGroupNCCL.cpp:737] [Rank 4] Watchdog caught collective operation");
        assert_eq!((r.rank, r.prefixed), (Some(4), false));
        let r = one("[E x] [PG ID 2 PG GUID 9 Rank 7] Timeout at NCCL work: 3");
        assert_eq!(r.rank, Some(7));
        assert_eq!(one("plain text [Rank x] no number").rank, None);
    }

    #[test]
    fn wrapped_messages_are_joined() {
        let text = "[rank2]:[E1 ProcessGroupNCCL.cpp:1] [Rank 2] Watchdog: WorkNCCL(SeqNum=4, OpTy\n\
                    pe=BROADCAST, NumelIn=1) ran for 5 milliseconds before timing out.\n\
                    [rank3]:[E1 ProcessGroupNCCL.cpp:1] [Rank 3] next";
        let r = records(0, text);
        assert_eq!(r.len(), 2);
        assert!(r[0].body.contains("OpType=BROADCAST"), "{}", r[0].body);
        // A finished sentence, a traceback's indented line or a new record is never joined.
        let text = "[E x ProcessGroupNCCL.cpp:1] [Rank 0] done.\nValueError: x\n";
        assert_eq!(records(0, text).len(), 2);
        let text = "[E x ProcessGroupNCCL.cpp:1] Rank 0\n         - [0] Timeout at collective";
        assert_eq!(records(0, text).len(), 2);
    }
}
