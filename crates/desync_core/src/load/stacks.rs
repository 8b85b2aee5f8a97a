//! Stacks files beside the dumps: `<dump file name>.stacks` (`rank_3.stacks` beside `rank_3`),
//! written by `desync.torch` when the rank dumps or gets SIGUSR2, and by `desync run` from
//! the stacks it collects before it stops a job. The text is Python's `faulthandler` output:
//!
//! ```text
//! # main thread 0x00007fdff2c37b80
//! Thread 0x00007fdf350236c0 (most recent call first):
//!   File "/venv/lib/python3.11/threading.py", line 324 in wait
//!
//! Current thread 0x00007fdff2c37b80 (most recent call first):
//!   File "/job/train.py", line 41 in wait_for_shard
//! ```
//!
//! Read with the dumps' trust rules: found by the same walk (no symlink out of the directory),
//! regular files only, bounded in size; a stacks file counts only beside a dump that was read
//! (the same folder: the same run).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::limits::{self, read_regular};
use crate::model::{Frame, RankStacks, StacksOrigin, ThreadStack, Trace, Warning, WarningKind};

/// What ends a stacks file's name: the dump's own name comes before it.
pub const STACKS_EXTENSION: &str = "stacks";

/// A stacks file larger than this is not read: faulthandler writes at most 100 threads of
/// 100 frames, a few hundred KiB with long paths.
pub const MAX_STACKS_BYTES: u64 = 8 << 20;

/// Threads and frames kept per file, past what faulthandler itself writes (100 of each).
const MAX_THREADS: usize = 1024;
const MAX_FRAMES: usize = 1024;

/// The rank a stacks file's name gives (`rank_3.stacks` -> 3), under the dumps' naming rule
/// (and `prefix`, when one is given). `None`: not a stacks file.
pub fn stacks_rank(file_name: &str, prefix: Option<&str>) -> Option<u32> {
    let dump_name = file_name.strip_suffix(STACKS_EXTENSION)?.strip_suffix('.')?;
    let (stem, rank) = super::split_rank(dump_name)?;
    prefix.is_none_or(|p| stem == p).then_some(rank)
}

/// Reads the stacks files found beside the dumps into `trace.stacks`. A file counts when it
/// sits in the folder of its rank's dump, or, for a rank with no dump (it died before
/// dumping), in a folder that holds the dumps read. Files that cannot be read are warnings;
/// an empty file (a rank never asked) is nothing.
pub(crate) fn attach(trace: &mut Trace, found: Vec<(PathBuf, u32)>) {
    let folders: Vec<&Path> = trace.ranks.iter().filter_map(|r| r.path.parent()).collect();
    let mut chosen: Vec<(u32, PathBuf)> = Vec::new();
    for (path, rank) in found {
        let folder = path.parent();
        let beside = match trace.rank(rank) {
            Some(dump) => folder == dump.path.parent(),
            None => folder.is_some_and(|f| folders.contains(&f)),
        };
        if beside && !chosen.iter().any(|(r, _)| *r == rank) {
            chosen.push((rank, path));
        }
    }
    let mut stacks = Vec::new();
    for (rank, path) in chosen {
        let text = match read_regular(&path, MAX_STACKS_BYTES) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                trace.warnings.push(Warning {
                    kind: WarningKind::Unreadable,
                    path: Some(path),
                    rank: Some(rank),
                    message: format!("stacks file not read: {e}"),
                });
                continue;
            }
        };
        stacks.extend(rank_stacks(rank, path, &text, StacksOrigin::File));
    }
    stacks.sort_by_key(|s| s.rank);
    trace.stacks = stacks;
}

/// One rank's stacks from faulthandler's text (a stacks file, or the live `dump_traceback`
/// of `desync watch`); `None` when no thread has a frame.
pub fn rank_stacks(
    rank: u32,
    path: PathBuf,
    text: &str,
    origin: StacksOrigin,
) -> Option<RankStacks> {
    let (threads, main_id) = parse(text);
    let main = main_thread(&threads, main_id)?;
    let failure = own_failure(text);
    Some(RankStacks { rank, path, threads, main, origin, failure })
}

/// The rank's own uncaught exception, from the first line desync's Python side writes
/// (`# desync stacks of rank 1 (pid 9): uncaught ValueError: bad shard`). The other reasons it
/// writes there (a peer's signal, a requested dump, SIGABRT) are no exception of this rank's.
fn own_failure(text: &str) -> Option<String> {
    let header = text.lines().next()?.strip_prefix("# desync stacks of rank ")?;
    let (_, reason) = header.split_once("): ")?;
    let exception = reason.strip_prefix("uncaught ")?.trim();
    (!exception.is_empty()).then(|| exception.to_owned())
}

/// The threads of the newest snapshot in `text` and the main thread's id when the file says
/// it (`# main thread 0x...`). faulthandler appends: a process asked twice holds two
/// snapshots, and a thread id seen again starts the newer one.
pub fn parse(text: &str) -> (Vec<ThreadStack>, Option<u64>) {
    let mut threads: Vec<ThreadStack> = Vec::new();
    let mut main_id = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(id) = trimmed.strip_prefix("# main thread ") {
            main_id = hex_id(id);
        } else if let Some(header) = trimmed.strip_suffix("(most recent call first):") {
            let id = header.split_whitespace().find_map(hex_id);
            if id.is_some() && threads.iter().any(|t| t.id == id) {
                threads.clear();
            }
            if threads.len() < MAX_THREADS {
                threads.push(ThreadStack { id, frames: Vec::new() });
            }
        } else if let Some(frame) = parse_frame(trimmed)
            && let Some(thread) = threads.last_mut()
            && thread.frames.len() < MAX_FRAMES
        {
            thread.frames.push(frame);
        }
    }
    (threads, main_id)
}

/// `File "/job/train.py", line 57 in train_step`; names longer than a dump's strings may be
/// are dropped, as in the dumps.
fn parse_frame(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix("File \"")?;
    let (file, rest) = rest.rsplit_once("\", line ")?;
    let (number, function) = rest.split_once(" in ").unwrap_or((rest, "?"));
    let function = function.trim();
    if file.len() > limits::MAX_STRING_BYTES || function.len() > limits::MAX_STRING_BYTES {
        return None;
    }
    Some(Frame::new(Arc::from(function), Arc::from(file), number.trim().parse().ok()?))
}

fn hex_id(text: &str) -> Option<u64> {
    u64::from_str_radix(text.trim().strip_prefix("0x")?, 16).ok()
}

/// The thread that runs the script: the one the file names; else the last one not started by
/// `threading` (faulthandler lists the newest thread first, so the main thread comes last);
/// else the last one. `None` when no thread has a frame.
fn main_thread(threads: &[ThreadStack], named: Option<u64>) -> Option<usize> {
    if let Some(i) = named.and_then(|id| threads.iter().position(|t| t.id == Some(id))) {
        return Some(i);
    }
    let started_by_threading = |t: &ThreadStack| {
        t.frames.last().is_some_and(|f| f.file.ends_with("threading.py") && f.is_library())
    };
    let with_frames = |t: &&ThreadStack| !t.frames.is_empty();
    let last = |keep: &dyn Fn(&ThreadStack) -> bool| {
        threads.iter().rposition(|t| with_frames(&t) && keep(t))
    };
    last(&|t| !started_by_threading(t)).or_else(|| last(&|_| true))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data-loading worker thread listed first, the main thread last (faulthandler's order).
    const TWO_THREADS: &str = "Thread 0x00007f0000000002 (most recent call first):\n  \
File \"/usr/lib/python3.12/threading.py\", line 359 in wait\n  \
File \"/srv/proj/loader.py\", line 12 in fill_queue\n  \
File \"/usr/lib/python3.12/threading.py\", line 1010 in run\n  \
File \"/usr/lib/python3.12/threading.py\", line 1073 in _bootstrap_inner\n  \
File \"/usr/lib/python3.12/threading.py\", line 1030 in _bootstrap\n\n\
Current thread 0x00007f0000000001 (most recent call first):\n  \
File \"/srv/proj/sync.py\", line 88 in await_marker\n  \
File \"/srv/proj/main.py\", line 20 in <module>\n";

    #[test]
    fn the_main_thread_is_the_one_not_started_by_threading() {
        let (threads, named) = parse(TWO_THREADS);
        assert_eq!(threads.len(), 2);
        assert_eq!(named, None);
        let main = main_thread(&threads, named).unwrap();
        assert_eq!(main, 1);
        let user = threads[main].innermost_user().unwrap();
        assert_eq!((&*user.function, user.line), ("await_marker", 88));
    }

    #[test]
    fn only_the_ranks_own_uncaught_exception_is_its_failure() {
        let with =
            |reason: &str| format!("# desync stacks of rank 2 (pid 77): {reason}\n{TWO_THREADS}");
        let read = |text: &str| {
            rank_stacks(2, PathBuf::from("rank_2.stacks"), text, StacksOrigin::File)
                .unwrap()
                .failure
        };
        assert_eq!(
            read(&with("uncaught KeyError: 'shard_17'")).as_deref(),
            Some("KeyError: 'shard_17'")
        );
        // A peer's failure, a requested dump, an abort, or no header: no exception of its own.
        assert_eq!(read(&with("signal from rank 1: uncaught KeyError: 'shard_17'")), None);
        assert_eq!(read(&with("requested through /run/dump-now")), None);
        assert_eq!(read(&with("SIGABRT")), None);
        assert_eq!(read(TWO_THREADS), None);
    }

    #[test]
    fn a_named_main_thread_wins_and_a_repeated_id_starts_a_newer_snapshot() {
        let text = format!("# main thread 0x00007f0000000002\n{TWO_THREADS}{TWO_THREADS}");
        let (threads, named) = parse(&text);
        assert_eq!(threads.len(), 2, "the second snapshot replaces the first");
        assert_eq!(main_thread(&threads, named), Some(0));
    }

    #[test]
    fn names_are_the_dumps_names_with_stacks_after_them() {
        assert_eq!(stacks_rank("rank_3.stacks", None), Some(3));
        assert_eq!(
            stacks_rank("nccl_trace_rank_12.json.stacks", Some("nccl_trace_rank_")),
            Some(12)
        );
        assert_eq!(stacks_rank("rank_3.stacks", Some("gloo_")), None);
        assert_eq!(stacks_rank("rank_3", None), None);
        assert_eq!(stacks_rank("notes.stacks", None), None);
    }
}
