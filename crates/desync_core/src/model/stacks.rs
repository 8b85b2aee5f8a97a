//! Where a rank's threads were when it was asked: the Python stacks a rank writes beside its
//! dump (`<dump file name>.stacks`, faulthandler's text; `load/stacks.rs` reads them). A dump
//! holds each collective's frames, not where the rank is *now*: for a rank that stopped
//! issuing collectives, only its stack says which line it waits on.

use std::path::PathBuf;

use super::Frame;

/// One rank's stacks file, parsed.
#[derive(Debug, Clone)]
pub struct RankStacks {
    pub rank: u32,
    /// The file it was read from.
    pub path: PathBuf,
    /// Every thread of the newest snapshot in the file, in the file's order.
    pub threads: Vec<ThreadStack>,
    /// Index into `threads` of the main thread: the one that runs the training script.
    pub main: usize,
    /// Where the stack was read from: a stacks file, or the traceback of an error the rank
    /// raised, from the job's log.
    pub origin: StacksOrigin,
    /// The rank's own uncaught exception (`ValueError: bad shard`), as desync's Python side
    /// writes it in a stacks file's first line when the rank dies of one; `None` for stacks
    /// taken on request, on a peer's signal, or read from a log.
    pub failure: Option<String>,
}

/// What a rank's stack was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StacksOrigin {
    /// A stacks file beside the dump (`path`): every thread when the rank dumped or was asked.
    File,
    /// The traceback of an exception the rank raised, in the job's log (`path`): the main
    /// thread's frames when it raised, lines `first_line..=exception_line`.
    Traceback { exception: String, first_line: usize, exception_line: usize },
    /// Taken from the live job by `desync watch` (the debug server's `dump_traceback`); `path`
    /// names the rank's worker, no file.
    Live,
}

impl RankStacks {
    pub fn main_thread(&self) -> &ThreadStack {
        &self.threads[self.main]
    }
}

/// One thread's stack, innermost frame first (Flight Recorder's order too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStack {
    /// The thread's identifier as written (`0x00007fdff2c37b80`), `None` if unreadable.
    pub id: Option<u64>,
    pub frames: Vec<Frame>,
}

impl ThreadStack {
    /// The innermost frame of the user's code ([`Frame::is_library`] decides, as for the
    /// dumps' frames).
    pub fn innermost_user(&self) -> Option<&Frame> {
        self.frames.iter().find(|f| !f.is_library())
    }
}
