//! Per-file deduplication of the values that repeat in every entry (op names, process group
//! names, dtype lists, size lists, stacks). One interner lives for one file's decode, inside
//! that file's rayon task, so no locking is needed.
//!
//! Invariant: within one interner, equal values are the same `Arc`, so a [`Call`] made of
//! interned parts can be keyed by their addresses (cheap) instead of their contents (a stack is
//! ~20 frames); the interner keeps every part alive, so no address is reused while it is keyed.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::model::{Call, Dtypes, Frame, Op, Sizes, Stack};

#[derive(Default)]
pub struct Interner {
    strs: FxHashMap<Box<str>, Arc<str>>,
    ops: FxHashMap<Arc<str>, Arc<Op>>,
    sizes: FxHashMap<Box<[i64]>, Sizes>,
    flat_sizes: Vec<i64>,
    dtypes: FxHashMap<Vec<Arc<str>>, Dtypes>,
    stacks: FxHashMap<Vec<Frame>, Stack>,
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

impl Interner {
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

    /// `call`'s parts must come from this interner (see the module invariant).
    pub fn call(&mut self, call: Call) -> Arc<Call> {
        self.calls.entry(CallKey::of(&call)).or_insert_with(|| Arc::new(call)).clone()
    }
}
