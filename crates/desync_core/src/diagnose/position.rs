//! Where each rank is: its latest recorded collective (highest `record_id`, which counts
//! across all groups of the process) and whether that collective finished there.

use std::sync::Arc;

use crate::align::{Alignment, Token};
use crate::model::{Entry, Frame, Sizes, Trace};

#[derive(Debug, Clone, PartialEq)]
pub enum Position {
    /// No readable dump.
    NoDump,
    /// A dump with no entries (nothing recorded, or the buffer was disabled).
    Idle,
    At(At),
}

#[derive(Debug, Clone, PartialEq)]
pub struct At {
    /// Index into `Trace::process_groups`.
    pub pg: usize,
    pub seq: u64,
    pub op: Arc<str>,
    pub input_sizes: Sizes,
    pub dtypes: Arc<[Arc<str>]>,
    /// `Some(true)` when the dump says it completed, `Some(false)` when it says it did not,
    /// `None` when the producer does not track completion.
    pub completed: Option<bool>,
    /// The entry's state: with NCCL, "scheduled" (never started) and "started" ranks behave
    /// differently in a hang.
    pub state: crate::model::State,
    pub site: Option<Frame>,
    pub token: Token,
}

pub fn positions(trace: &Trace, alignment: &Alignment) -> Vec<(u32, Position)> {
    let mut out: Vec<(u32, Position)> =
        (0..trace.world_size).map(|r| (r, Position::NoDump)).collect();
    for dump in &trace.ranks {
        let position = dump
            .entries
            .iter()
            .filter(|e| !e.is_p2p())
            .max_by_key(|e| e.record_id)
            .map_or(Position::Idle, |e| at(trace, alignment, dump.rank, e));
        match out.binary_search_by_key(&dump.rank, |(r, _)| *r) {
            Ok(i) => out[i].1 = position,
            Err(i) => out.insert(i, (dump.rank, position)),
        }
    }
    out
}

fn at(trace: &Trace, alignment: &Alignment, rank: u32, e: &Entry) -> Position {
    let Some(pg) = trace.process_groups.iter().position(|p| p.name == *e.pg_name()) else {
        return Position::Idle;
    };
    let group = &alignment.groups[pg];
    let progress = group.stream(rank).map(|s| s.progress).unwrap_or_default();
    // A status for the group tracks completion even before anything completed (FR writes -1).
    let has_status = trace.rank(rank).is_some_and(|d| {
        d.pg_status.iter().any(|s| s.pg_id == e.pg_id() && s.last_enqueued.is_some())
    });
    let tracks_completion = has_status
        || progress.last_completed.is_some()
        || e.state != crate::model::State::Scheduled;
    let completed = tracks_completion.then(|| {
        e.is_completed() || progress.last_completed.is_some_and(|c| c >= e.collective_seq_id)
    });
    let entries = group.entries_at(trace, rank, e.collective_seq_id);
    Position::At(At {
        pg,
        seq: e.collective_seq_id,
        op: e.op().name.clone(),
        input_sizes: e.input_sizes().clone(),
        dtypes: e.input_dtypes().clone(),
        completed,
        state: e.state,
        site: e.call_site().cloned(),
        token: crate::align::token_of(&entries),
    })
}
