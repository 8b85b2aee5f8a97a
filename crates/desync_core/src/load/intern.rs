//! Deduplication of the values that repeat in every entry, at two levels.
//!
//! - Per file ([`Interner`]): op names, process group names, dtype lists, size lists, stacks.
//!   One interner lives for one file's decode, inside that file's rayon task, so no locking.
//! - Per load ([`Streams`]): the [`Call`]s and entry [`Head`]s of every file. Ranks of one job
//!   run the same stream (same collectives, same ids, same call sites); only their clocks
//!   differ. Each file's distinct calls are looked up once in the load's set, and each entry's
//!   head by its ids and its (now shared) call's address, so a head stored once serves every
//!   rank whose entry says the same: memory grows with the distinct streams, not the ranks.
//!
//! Invariant: within one interner, equal values are the same `Arc`, so a [`Call`] made of
//! interned parts can be keyed by their addresses (cheap) instead of their contents (a stack is
//! ~20 frames); the interner keeps every part alive, so no address is reused while it is keyed.
//! Within one [`Streams`], equal calls are the same `Arc` too, and its heads keep them alive.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::model::{Call, Dtypes, Entry, Frame, Head, Op, Sizes, Stack, State};

/// The calls and heads shared by every file of one load (see the module comment). Locked per
/// file for calls (a file has tens of distinct calls) and per entry for heads, in shards so
/// that the threads decoding different files rarely meet.
pub struct Streams {
    calls: Mutex<FxHashSet<Arc<Call>>>,
    heads: [Mutex<FxHashMap<HeadKey, Arc<Head>>>; HEAD_SHARDS],
    /// The heads of a few files decoded last, each by entry position: a file's guesses (see
    /// [`Interner::entry`]).
    recent: Mutex<Vec<Vec<Option<Arc<Head>>>>>,
}

impl Default for Streams {
    fn default() -> Self {
        Self {
            calls: Mutex::default(),
            heads: std::array::from_fn(|_| Mutex::default()),
            recent: Mutex::default(),
        }
    }
}

const HEAD_SHARDS: usize = 64;

/// How many decoded files' heads [`Streams`] keeps as guesses: one per decoding thread is
/// enough, a few more cost nothing (a pointer per entry).
const RECENT_FILES: usize = 8;

/// A [`Head`] by its values and its call's address (calls are shared, so the address is the
/// call).
#[derive(PartialEq, Eq, Hash)]
struct HeadKey {
    record_id: u64,
    collective_seq_id: u64,
    p2p_seq_id: u64,
    op_id: u64,
    call: usize,
    state: State,
    retired: bool,
}

impl Streams {
    /// The load's copy of `call`, equal by content.
    fn call(&self, call: Call) -> Arc<Call> {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = calls.get(&call) {
            return found.clone();
        }
        let shared = Arc::new(call);
        calls.insert(shared.clone());
        shared
    }

    /// The load's head for these values; `call` must come from [`Streams::call`].
    fn head(&self, key: HeadKey, call: &Arc<Call>) -> Arc<Head> {
        let hash = FxBuildHasher.hash_one(&key);
        let shard = &self.heads[(hash >> 58) as usize % HEAD_SHARDS];
        let mut heads = shard.lock().unwrap_or_else(PoisonError::into_inner);
        heads
            .entry(key)
            .or_insert_with_key(|k| {
                Arc::new(Head {
                    record_id: k.record_id,
                    collective_seq_id: k.collective_seq_id,
                    p2p_seq_id: k.p2p_seq_id,
                    op_id: k.op_id,
                    call: call.clone(),
                    state: k.state,
                    retired: k.retired,
                })
            })
            .clone()
    }

    /// The heads of a file decoded earlier, to guess this file's from (empty when none).
    fn guesses(&self) -> Vec<Option<Arc<Head>>> {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_default()
    }

    fn remember(&self, heads: Vec<Option<Arc<Head>>>) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.len() < RECENT_FILES && !heads.is_empty() {
            recent.push(heads);
        }
    }
}

impl HeadKey {
    fn matches(&self, head: &Head) -> bool {
        self.record_id == head.record_id
            && self.collective_seq_id == head.collective_seq_id
            && self.p2p_seq_id == head.p2p_seq_id
            && self.op_id == head.op_id
            && self.call == Arc::as_ptr(&head.call) as usize
            && self.state == head.state
            && self.retired == head.retired
    }
}

/// An entry's values as a decoder reads them, before the shared parts are looked up.
#[derive(Clone, Copy)]
pub struct EntryFields {
    pub record_id: u64,
    pub collective_seq_id: u64,
    pub p2p_seq_id: u64,
    pub op_id: u64,
    pub state: State,
    pub retired: bool,
    pub time_created_ns: i64,
    pub time_started_ns: Option<std::num::NonZeroI64>,
    pub time_completed_ns: Option<std::num::NonZeroI64>,
    pub duration_ms: Option<f32>,
}

pub struct Interner<'s> {
    streams: &'s Streams,
    strs: FxHashMap<Box<str>, Arc<str>>,
    ops: FxHashMap<Arc<str>, Arc<Op>>,
    sizes: FxHashMap<Box<[i64]>, Sizes>,
    flat_sizes: Vec<i64>,
    dtypes: FxHashMap<Vec<Arc<str>>, Dtypes>,
    stacks: FxHashMap<Vec<Frame>, Stack>,
    /// Per file, by the addresses of its parts: the load's shared copy.
    calls: FxHashMap<CallKey, Arc<Call>>,
    /// Another file's heads by entry position, and this file's as they are found.
    guesses: Vec<Option<Arc<Head>>>,
    found: Vec<Option<Arc<Head>>>,
}

/// A [`Call`] by the addresses of its interned parts plus its plain values.
#[derive(PartialEq, Eq, Hash)]
struct CallKey {
    parts: [usize; 8],
    pg_id: i64,
    is_p2p: bool,
    timeout_ms: Option<u32>,
}

impl CallKey {
    fn of(call: &Call) -> Self {
        fn addr<T: ?Sized>(shared: &Arc<T>) -> usize {
            Arc::as_ptr(shared).cast::<()>() as usize
        }
        Self {
            parts: [
                addr(&call.op),
                addr(&call.pg_name),
                addr(&call.pg_desc),
                addr(&call.input_sizes),
                addr(&call.output_sizes),
                addr(&call.input_dtypes),
                addr(&call.output_dtypes),
                call.stack.as_ref().map_or(0, addr),
            ],
            pg_id: call.pg_id,
            is_p2p: call.is_p2p,
            timeout_ms: call.timeout_ms,
        }
    }
}

impl<'s> Interner<'s> {
    /// An interner for one file of the load `streams` belongs to.
    pub fn new(streams: &'s Streams) -> Self {
        Self {
            streams,
            strs: FxHashMap::default(),
            ops: FxHashMap::default(),
            sizes: FxHashMap::default(),
            flat_sizes: Vec::new(),
            dtypes: FxHashMap::default(),
            stacks: FxHashMap::default(),
            calls: FxHashMap::default(),
            guesses: streams.guesses(),
            found: Vec::new(),
        }
    }

    pub fn str(&mut self, s: &str) -> Arc<str> {
        if let Some(found) = self.strs.get(s) {
            return found.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        self.strs.insert(s.into(), shared.clone());
        shared
    }

    pub fn op(&mut self, profiling_name: &str) -> Arc<Op> {
        if let Some(op) = self.ops.get(profiling_name) {
            return op.clone();
        }
        let op = Arc::new(Op::parse(profiling_name, &mut |s| self.str(s)));
        self.ops.insert(op.profiling_name.clone(), op.clone());
        op
    }

    /// Shapes arrive as nested iterators and are looked up by a flat encoding (per shape: its
    /// rank, then its dims) in a reused buffer, so a size list seen before costs no allocation.
    pub fn sizes<S: IntoIterator<Item = i64>>(
        &mut self,
        shapes: impl IntoIterator<Item = S>,
    ) -> Sizes {
        let flat = &mut self.flat_sizes;
        flat.clear();
        for shape in shapes {
            let at = flat.len();
            flat.push(0);
            flat.extend(shape);
            flat[at] = (flat.len() - at - 1) as i64;
        }
        if let Some(found) = self.sizes.get(flat.as_slice()) {
            return found.clone();
        }
        let mut shapes = Vec::new();
        let mut rest = flat.as_slice();
        while let Some((&rank, tail)) = rest.split_first() {
            let (dims, tail) = tail.split_at(rank as usize);
            shapes.push(dims.to_vec());
            rest = tail;
        }
        let shared: Sizes = Arc::from(shapes);
        self.sizes.insert(flat.as_slice().into(), shared.clone());
        shared
    }

    pub fn dtypes(&mut self, dtypes: Vec<Arc<str>>) -> Dtypes {
        if let Some(found) = self.dtypes.get(&dtypes) {
            return found.clone();
        }
        let shared: Dtypes = Arc::from(dtypes.clone());
        self.dtypes.insert(dtypes, shared.clone());
        shared
    }

    pub fn stack(&mut self, frames: Vec<Frame>) -> Stack {
        if let Some(found) = self.stacks.get(&frames) {
            return found.clone();
        }
        let shared: Stack = Arc::from(frames.clone());
        self.stacks.insert(frames, shared.clone());
        shared
    }

    /// `call`'s parts must come from this interner (see the module invariant). The result is
    /// the load's shared copy.
    fn call_ref<'c>(
        calls: &'c mut FxHashMap<CallKey, Arc<Call>>,
        streams: &Streams,
        call: Call,
    ) -> &'c Arc<Call> {
        calls.entry(CallKey::of(&call)).or_insert_with(|| streams.call(call))
    }

    /// One entry, its head shared with every rank of the load that has the same one. `call`'s
    /// parts must come from this interner; `position` is the entry's index in its file.
    ///
    /// Ranks of one stream class hold the same head at the same position, so the head another
    /// file had there is checked first: equal keys are the same head of the load's map (every
    /// guess came from it), so a right guess gives the same `Arc` as the map, without hashing
    /// the key or taking a lock. A wrong or missing guess falls back to the map.
    pub fn entry(&mut self, position: usize, call: Call, f: EntryFields) -> Entry {
        let streams = self.streams;
        let call = Self::call_ref(&mut self.calls, streams, call);
        let key = HeadKey {
            record_id: f.record_id,
            collective_seq_id: f.collective_seq_id,
            p2p_seq_id: f.p2p_seq_id,
            op_id: f.op_id,
            call: Arc::as_ptr(call) as usize,
            state: f.state,
            retired: f.retired,
        };
        let head = match self.guesses.get(position) {
            Some(Some(guess)) if key.matches(guess) => guess.clone(),
            _ => streams.head(key, call),
        };
        if self.found.len() <= position {
            self.found.resize(position + 1, None);
        }
        self.found[position] = Some(head.clone());
        Entry {
            head,
            time_created_ns: f.time_created_ns,
            time_started_ns: f.time_started_ns,
            time_completed_ns: f.time_completed_ns,
            duration_ms: f.duration_ms,
        }
    }
}

impl Drop for Interner<'_> {
    /// This file's heads become the guesses of a later file.
    fn drop(&mut self) {
        self.streams.remember(std::mem::take(&mut self.found));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One file's entries: `(record_id, state)` at each position.
    fn decode(streams: &Streams, entries: &[(u64, State)]) -> Vec<Arc<Head>> {
        let mut intern = Interner::new(streams);
        let mut heads = Vec::new();
        for (position, &(record_id, state)) in entries.iter().enumerate() {
            let op = intern.op("nccl:all_reduce");
            let call = Call {
                is_p2p: op.p2p.is_some(),
                op,
                pg_id: 0,
                pg_name: intern.str("0"),
                pg_desc: intern.str("default_pg"),
                input_sizes: intern.sizes([[4i64]]),
                output_sizes: intern.sizes([[4i64]]),
                input_dtypes: intern.dtypes(vec![intern.str("Float")]),
                output_dtypes: intern.dtypes(vec![intern.str("Float")]),
                timeout_ms: None,
                stack: None,
            };
            let fields = EntryFields {
                record_id,
                collective_seq_id: record_id + 1,
                p2p_seq_id: 0,
                op_id: record_id + 1,
                state,
                retired: false,
                time_created_ns: 1,
                time_started_ns: None,
                time_completed_ns: None,
                duration_ms: None,
            };
            heads.push(intern.entry(position, call, fields).head);
        }
        heads
    }

    /// A head guessed from another file's position is used only when it says the same: a
    /// different state, or the same entries shifted by one, still get the load's own head.
    #[test]
    fn guessed_heads_are_the_loads_heads() {
        use State::{Completed, Started};
        let streams = Streams::default();
        let first = decode(&streams, &[(0, Completed), (1, Completed), (2, Started)]);
        let same = decode(&streams, &[(0, Completed), (1, Completed), (2, Started)]);
        assert!(first.iter().zip(&same).all(|(a, b)| Arc::ptr_eq(a, b)));

        let other_state = decode(&streams, &[(0, Completed), (1, Started), (2, Started)]);
        assert!(Arc::ptr_eq(&other_state[0], &first[0]));
        assert!(!Arc::ptr_eq(&other_state[1], &first[1]));
        assert_eq!(other_state[1].state, Started);
        assert!(Arc::ptr_eq(&other_state[2], &first[2]));

        let shifted = decode(&streams, &[(1, Completed), (2, Started)]);
        assert!(Arc::ptr_eq(&shifted[0], &first[1]) && Arc::ptr_eq(&shifted[1], &first[2]));
        assert_eq!(shifted[0].record_id, 1);
    }
}
