//! Deduplication of the values that repeat in every entry, at two levels.
//!
//! - Per file ([`Interner`]): op names, process group names, dtype lists, size lists, stacks.
//!   One interner lives for one file's decode, inside that file's rayon task, so no locking.
//! - Per load ([`Streams`]): the [`Call`]s and entry [`Head`]s of every file. Ranks of one job
//!   run the same stream (same collectives, same ids, same call sites); only their clocks
//!   differ. Each file's distinct calls are looked up once in the load's set, and each entry's
//!   head by its ids and its (now shared) call's address, so a head stored once serves every
//!   rank whose entry says the same: memory grows with the distinct streams, not the ranks.
//!   The head also holds the high halves of the clocks (`ClockHigh`: ranks of one stream
//!   read their clocks within seconds of each other), so a rank keeps 16 bytes of clocks.
//!
//! Invariant: within one interner, equal values are the same `Arc`, so a [`Call`] made of
//! interned parts can be keyed by their addresses (cheap) instead of their contents (a stack is
//! ~20 frames); the interner keeps every part alive, so no address is reused while it is keyed.
//! Within one [`Streams`], equal calls are the same `Arc` too, and its heads keep them alive.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

use crate::model::{Call, ClockHigh, Clocks, Dtypes, Entry, Frame, Head, Op, Sizes, Stack, State};

/// The calls and heads shared by every file of one load (see the module comment). Locked per
/// file for calls (a file has tens of distinct calls) and per entry for heads, in shards so
/// that the threads decoding different files rarely meet.
pub struct Streams {
    calls: Mutex<FxHashSet<Arc<Call>>>,
    heads: [Mutex<FxHashMap<HeadKey, Arc<Head>>>; HEAD_SHARDS],
}

impl Default for Streams {
    fn default() -> Self {
        Self { calls: Mutex::default(), heads: std::array::from_fn(|_| Mutex::default()) }
    }
}

const HEAD_SHARDS: usize = 64;

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
    clock_high: ClockHigh,
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
                    clock_high: k.clock_high,
                })
            })
            .clone()
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
    fn call_ref(&mut self, call: Call) -> &Arc<Call> {
        let streams = self.streams;
        self.calls.entry(CallKey::of(&call)).or_insert_with(|| streams.call(call))
    }

    /// One entry, its head shared with every rank of the load that has the same one. `call`'s
    /// parts must come from this interner.
    pub fn entry(&mut self, call: Call, f: EntryFields) -> Entry {
        let streams = self.streams;
        let call = self.call_ref(call);
        let (clock_high, low) = Clocks {
            created_ns: f.time_created_ns,
            started_ns: f.time_started_ns,
            completed_ns: f.time_completed_ns,
            duration_ms: f.duration_ms,
        }
        .split();
        let key = HeadKey {
            record_id: f.record_id,
            collective_seq_id: f.collective_seq_id,
            p2p_seq_id: f.p2p_seq_id,
            op_id: f.op_id,
            call: Arc::as_ptr(call) as usize,
            state: f.state,
            retired: f.retired,
            clock_high,
        };
        Entry::from_parts(streams.head(key, call), low)
    }
}
