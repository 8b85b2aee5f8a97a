//! One Flight Recorder entry: a collective or p2p operation as one rank recorded it.

use std::sync::Arc;

use super::Op;

/// Tensor shapes, one inner list per tensor (a 0-dim tensor is `[]`).
pub type Sizes = Arc<[Vec<i64>]>;

/// A Python stack, innermost frame first (FR's order).
pub type Stack = Arc<[Frame]>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: Arc<str>,
    pub file: Arc<str>,
    pub line: u32,
}

impl Frame {
    /// Frames inside torch itself (the `all_reduce` wrapper, `c10d_logger`) say nothing about
    /// the user's control flow; they are skipped when comparing call sites.
    pub fn is_library(&self) -> bool {
        let f = &*self.file;
        f.contains("/torch/distributed/")
            || f.contains("/torch/nn/parallel/")
            || f.contains("/torch/utils/")
            || f.contains("/torch/_dynamo/")
            || f.starts_with('<')
    }
}

/// Completion state as FR records it. Gloo and hook-recorded entries stay `Scheduled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Scheduled,
    Started,
    Completed,
    Unknown,
}

impl State {
    pub fn parse(s: &str) -> Self {
        match s {
            "scheduled" => Self::Scheduled,
            "started" => Self::Started,
            "completed" => Self::Completed,
            _ => Self::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Started => "started",
            Self::Completed => "completed",
            Self::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// Per-process ring-buffer id (all process groups of the rank share the counter).
    pub record_id: u64,
    /// Process-local group uid; not comparable across ranks.
    pub pg_id: i64,
    pub pg_name: Arc<str>,
    pub pg_desc: Arc<str>,
    /// Per-group counter, starting at 1; p2p entries carry the current value unchanged.
    pub collective_seq_id: u64,
    pub p2p_seq_id: u64,
    pub op_id: u64,
    /// Shared by every entry of the same `profiling_name` in a file (one pointer, not ~80
    /// bytes per entry: 16k ranks x 2,000 entries add up).
    pub op: Arc<Op>,
    pub input_sizes: Sizes,
    pub output_sizes: Sizes,
    pub input_dtypes: Arc<[Arc<str>]>,
    pub output_dtypes: Arc<[Arc<str>]>,
    pub state: State,
    pub time_created_ns: i64,
    pub time_started_ns: Option<i64>,
    pub time_completed_ns: Option<i64>,
    pub duration_ms: Option<f64>,
    pub retired: bool,
    pub timeout_ms: Option<u32>,
    pub is_p2p: bool,
    /// `None` when the dump carries no frames (JSON dumps never do).
    pub stack: Option<Stack>,
}

impl Entry {
    /// The innermost frame outside torch: where the user's code called the collective.
    pub fn call_site(&self) -> Option<&Frame> {
        self.stack.as_deref()?.iter().find(|f| !f.is_library())
    }

    /// The user part of the stack, innermost first.
    pub fn user_frames(&self) -> impl Iterator<Item = &Frame> {
        self.stack.as_deref().unwrap_or(&[]).iter().filter(|f| !f.is_library())
    }

    /// Whether the dump says this collective finished on this rank.
    pub fn is_completed(&self) -> bool {
        self.state == State::Completed
    }
}

#[cfg(test)]
mod tests {
    /// Entries dominate memory (93% of the peak at 4,096 ranks, BENCHMARKS.md): 16,384 ranks x
    /// 2,000 entries is 32M of them. Growing this struct is a decision, not an accident.
    #[test]
    fn entry_stays_small() {
        let size = std::mem::size_of::<super::Entry>();
        assert!(size <= 232, "Entry grew to {size} bytes");
    }
}
