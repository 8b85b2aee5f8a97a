//! The data model every stage shares: a [`Trace`] of per-rank dumps, their entries, and the
//! process groups they belong to.
//!
//! Invariants: `Trace::ranks` is sorted by rank and holds one dump per rank; strings, size lists
//! and stacks are shared `Arc`s, deduplicated per file at load time, and an entry's [`Head`]
//! (its ids, call and state) is shared by every rank of the load whose entry says the same
//! (load/intern.rs), so cloning an [`Entry`] is cheap and memory grows with distinct values and
//! streams, not with entries and ranks.

mod entry;
mod op;
mod ranks;
mod stacks;

use std::path::PathBuf;
use std::sync::Arc;

pub use entry::{
    Call, ClockHigh, Clocks, Dtypes, Entry, Frame, Head, Sizes, Stack, State, is_library_file,
};
pub use op::{Op, OpKind, P2pDirection};
pub use ranks::{RankSet, format_ranks};
pub use stacks::{RankStacks, StacksOrigin, ThreadStack};

/// Everything loaded from one job: the readable dumps, what could not be read, and the
/// process groups inferred from them.
#[derive(Debug, Default)]
pub struct Trace {
    pub ranks: Vec<RankDump>,
    /// World size as far as the evidence shows (largest pg membership, highest rank + 1).
    pub world_size: u32,
    /// Whether a record states the world size (a member list of the default group, its
    /// gather shapes, `--world-size`), rather than only the dump files found: without one, a
    /// rank that left no file at all is invisible, so agreement is no all-clear.
    pub world_stated: bool,
    /// Ranks of the world with no readable dump.
    pub missing_ranks: Vec<u32>,
    pub process_groups: Vec<ProcessGroup>,
    pub warnings: Vec<Warning>,
    /// Files found and attempted, for the report.
    pub files_seen: usize,
    /// Entries that could not be used (unreadable, past a limit), per rank, sorted by rank:
    /// what was read may agree while the skipped entries hold the difference.
    pub skipped_entries: Vec<(u32, usize)>,
    /// The ranks' Python stacks found beside their dumps (`<dump>.stacks`), sorted by rank:
    /// where each rank was when it dumped or was asked.
    pub stacks: Vec<RankStacks>,
    /// Files in the dump directory named like a job's log (`job.log`, `rank_3.out`), not read
    /// by loading: `analyze` reads those whose content is a log (`logs::beside`).
    pub logs_found: Vec<PathBuf>,
}

impl Trace {
    pub fn rank(&self, rank: u32) -> Option<&RankDump> {
        self.ranks.binary_search_by_key(&rank, |r| r.rank).ok().map(|i| &self.ranks[i])
    }

    pub fn stacks_of(&self, rank: u32) -> Option<&RankStacks> {
        self.stacks.binary_search_by_key(&rank, |s| s.rank).ok().map(|i| &self.stacks[i])
    }

    pub fn process_group(&self, name: &str) -> Option<&ProcessGroup> {
        self.process_groups.iter().find(|pg| &*pg.name == name)
    }
}

/// The serialization the dump was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DumpFormat {
    Pickle,
    Json,
}

/// One rank's Flight Recorder dump.
#[derive(Debug)]
pub struct RankDump {
    pub rank: u32,
    pub path: PathBuf,
    pub format: DumpFormat,
    /// FR format version ("2.10"); not a torch release number.
    pub version: Arc<str>,
    pub comm_lib_version: Option<Arc<str>>,
    pub pg_config: Vec<PgConfig>,
    pub pg_status: Vec<PgStatus>,
    pub entries: Vec<Entry>,
}

impl RankDump {
    /// The backend prefix of the entries ("nccl", "gloo"...), from the first entry.
    pub fn backend(&self) -> Option<&str> {
        self.entries.first().map(|e| &*e.op().backend)
    }
}

/// One `pg_config` item as written by the rank.
#[derive(Debug, Clone)]
pub struct PgConfig {
    pub name: Arc<str>,
    pub desc: Arc<str>,
    /// Global ranks; empty when the producer wrote "[]" (Gloo in torch 2.11). Shared between
    /// files: every rank lists the whole world for the default group, which would otherwise
    /// grow with ranks squared.
    pub ranks: Arc<[u32]>,
}

/// One `pg_status` item: the last collective sequence ids this rank saw per process group.
/// Keyed by the process-local `pg_id`, not by name. -1 in the dump becomes `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgStatus {
    pub pg_id: i64,
    pub last_enqueued: Option<u64>,
    pub last_started: Option<u64>,
    pub last_completed: Option<u64>,
}

/// A process group across the job, keyed by its name (consistent across ranks, unlike `pg_id`).
#[derive(Debug, Clone)]
pub struct ProcessGroup {
    pub name: Arc<str>,
    pub desc: Arc<str>,
    /// Global ranks, sorted.
    pub members: Vec<u32>,
    pub membership: Membership,
}

impl ProcessGroup {
    pub fn label(&self) -> String {
        if self.desc.is_empty() || &*self.desc == "undefined" {
            format!("pg {}", self.name)
        } else {
            format!("pg {} ({})", self.name, self.desc)
        }
    }
}

/// Where a process group's membership came from, so the report can say how sure it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Membership {
    /// From `pg_config`, consistent across ranks.
    PgConfig,
    /// `pg_config` was empty or broken: the default group spans the whole world.
    InferredWorld,
    /// `pg_config` was empty or broken: members are the ranks whose entries name the group.
    InferredFromEntries,
    /// `pg_config` was empty or broken and one rank alone names the group, in a collective that
    /// never completed (which a one-member group's would): assumed to span the world. No
    /// record shows it; a verdict resting on it is inconclusive (`diagnose/mod.rs`).
    AssumedWorld,
}

/// Something that did not stop the analysis but the reader should know.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Warning {
    pub kind: WarningKind,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::report::serialize_opt_path"
    )]
    pub path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A file that could not be decoded (empty, truncated, corrupt).
    Unreadable,
    /// A file skipped on purpose (pipe, temp file, not a dump).
    Skipped,
    /// Two files claim the same rank.
    DuplicateRank,
    /// Dumps or entries set aside as another run: an earlier job's files, a rank's leftover
    /// file, a process group before it was destroyed and created again (`load/runs.rs`).
    Run,
    /// A rank with no dump.
    MissingRank,
    /// `pg_config` empty or inconsistent; membership inferred.
    Membership,
    /// Ranks wrote different FR format versions.
    Version,
    /// An entry or field could not be understood; it was kept as unknown.
    Entry,
    /// Ring buffers start at different sequence ids; older collectives cannot be compared.
    Window,
    /// A frame's source file was found but not read or not used: outside the source roots,
    /// not a regular file, or different from what ran.
    Source,
}
