//! Python stacks from the workers' `dump_traceback` handler (faulthandler's format), and the
//! one use the analysis has for them: in a live hang, the thread blocked inside a collective
//! shows the line that issued it, even when the recorder kept no frames (the CPU recorder's
//! JSON never has any).
//!
//! ```text
//! Thread 0x00007fdff2c37b80 (most recent call first):
//!   File "/job/train.py", line 57 in train_step
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use desync_core::model::{Frame, StacksOrigin, Trace};

/// One thread's stack, innermost frame first (FR's order too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStack {
    pub header: String,
    pub frames: Vec<Frame>,
}

pub fn parse(text: &str) -> Vec<ThreadStack> {
    let mut threads: Vec<ThreadStack> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.ends_with("(most recent call first):") {
            threads.push(ThreadStack { header: trimmed.to_owned(), frames: Vec::new() });
        } else if let Some(frame) = parse_frame(trimmed)
            && let Some(thread) = threads.last_mut()
        {
            thread.frames.push(frame);
        }
    }
    threads
}

/// `File "/job/train.py", line 57 in train_step`.
fn parse_frame(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (number, function) = rest.split_once(" in ").unwrap_or((rest, "?"));
    Some(Frame::new(function.trim().into(), file.into(), number.trim().parse().ok()?))
}

/// The thread that is inside a `torch.distributed` collective, with the collective's name
/// (the innermost `distributed_c10d.py` function: `all_reduce`, `barrier`...).
pub fn blocked_in_collective(threads: &[ThreadStack]) -> Option<(&ThreadStack, &str)> {
    threads.iter().find_map(|t| {
        let call =
            t.frames.iter().find(|f| f.file.ends_with("torch/distributed/distributed_c10d.py"))?;
        Some((t, &*call.function))
    })
}

/// Gives each rank's newest entry the stack of the thread blocked in that very collective,
/// when the entry has no frames of its own. Returns the stacks given, by rank.
///
/// The match is strict on purpose: the entry must be the rank's newest, and the blocked
/// thread's collective must have the entry's op name, so a stack is never pinned on a
/// collective it did not issue.
pub fn attach(trace: &mut Trace, stacks: &BTreeMap<u32, String>) -> BTreeMap<u32, Vec<Frame>> {
    let mut attached = BTreeMap::new();
    for dump in &mut trace.ranks {
        let Some(text) = stacks.get(&dump.rank) else { continue };
        let threads = parse(text);
        let Some((thread, function)) = blocked_in_collective(&threads) else { continue };
        let Some(newest) = dump.entries.iter_mut().max_by_key(|e| e.record_id) else { continue };
        if newest.stack().is_some() || !same_collective(&newest.op().name, function) {
            continue;
        }
        // The call and head are shared with other entries and ranks; this entry gets its own
        // copy with the stack.
        let mut call = (*newest.call).clone();
        call.stack = Some(Arc::from(thread.frames.clone()));
        newest.set_call(Arc::new(call));
        attached.insert(dump.rank, thread.frames.clone());
    }
    attached
}

/// Keeps every rank's live stacks as its stacks (`Trace::stacks`, origin `Live`), so the
/// analysis names where a rank that issued nothing is — the line it waits on (a file, a lock,
/// a queue) — as it does from a stacks file beside a dump. A rank with a stacks file keeps it.
pub fn keep_as_places(trace: &mut Trace, stacks: &BTreeMap<u32, String>) {
    for (&rank, text) in stacks {
        if trace.stacks_of(rank).is_some() {
            continue;
        }
        let name = std::path::PathBuf::from(format!("rank {rank}'s dump_traceback (live)"));
        trace.stacks.extend(desync_core::load::rank_stacks(rank, name, text, StacksOrigin::Live));
        trace.stacks.sort_by_key(|s| s.rank);
    }
}

/// Writes attached stacks into a JSON dump's newest entry as FR's own `frames`, so the saved
/// snapshot replays with the same code bridge. Other dumps come back unchanged.
pub fn embed_frames(dump: Vec<u8>, frames: &[Frame]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(&dump) else { return dump };
    let newest =
        value.get_mut("entries").and_then(serde_json::Value::as_array_mut).and_then(|entries| {
            entries
                .iter_mut()
                .max_by_key(|e| e.get("record_id").and_then(serde_json::Value::as_i64))
        });
    let Some(serde_json::Value::Object(entry)) = newest else { return dump };
    if entry.get("frames").and_then(serde_json::Value::as_array).is_some_and(|f| !f.is_empty()) {
        return dump;
    }
    let frames = frames
        .iter()
        .map(|f| serde_json::json!({"name": &*f.function, "filename": &*f.file, "line": f.line}))
        .collect();
    entry.insert("frames".into(), serde_json::Value::Array(frames));
    serde_json::to_vec(&value).unwrap_or(dump)
}

/// FR's op name against the Python function: `all_reduce` = `all_reduce`; the tensor variants
/// record another name of the same family (`_all_gather_base` for `all_gather_into_tensor`).
fn same_collective(op: &str, function: &str) -> bool {
    use desync_core::model::OpKind;
    let (a, b) = (OpKind::of(op), OpKind::of(function));
    op == function || (a == b && a != OpKind::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Current thread 0x00007fdf350236c0 (most recent call first):\n  <no Python frame>\n\n\
Thread 0x00007fdff2c37b80 (most recent call first):\n  File \"/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py\", line 83 in wrapper\n  \
File \"/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", line 2950 in all_reduce\n  \
File \"/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py\", line 81 in wrapper\n  \
File \"/job/train.py\", line 57 in train_step\n  File \"/job/train.py\", line 80 in <module>\n";

    #[test]
    fn parses_faulthandler_output() {
        let threads = parse(SAMPLE);
        assert_eq!(threads.len(), 2);
        assert!(threads[0].frames.is_empty());
        let (thread, function) = blocked_in_collective(&threads).unwrap();
        assert_eq!(function, "all_reduce");
        assert_eq!(thread.frames[3], Frame::new("train_step".into(), "/job/train.py".into(), 57));
    }

    #[test]
    fn live_stacks_become_the_ranks_places() {
        let mut trace = Trace::default();
        let waiting = "Thread 0x00007f0000000001 (most recent call first):\n  \
File \"/usr/lib/python3.11/time.py\", line 1 in sleep\n  \
File \"/job/train.py\", line 41 in wait_for_shard\n  File \"/job/train.py\", line 80 in <module>\n";
        let stacks = BTreeMap::from([(2, waiting.to_owned()), (0, SAMPLE.to_owned())]);
        keep_as_places(&mut trace, &stacks);
        let ranks: Vec<u32> = trace.stacks.iter().map(|s| s.rank).collect();
        assert_eq!(ranks, [0, 2]);
        let two = trace.stacks_of(2).unwrap();
        assert_eq!(two.origin, StacksOrigin::Live);
        let user = two.main_thread().innermost_user().unwrap();
        assert_eq!((&*user.function, user.line), ("wait_for_shard", 41));
    }

    #[test]
    fn collective_names() {
        assert!(same_collective("all_reduce", "all_reduce"));
        assert!(same_collective("_all_gather_base", "all_gather_into_tensor"));
        assert!(!same_collective("barrier", "all_reduce"));
    }
}
