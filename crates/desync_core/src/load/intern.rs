//! Per-file deduplication of the values that repeat in every entry (op names, process group
//! names, dtype lists, size lists, stacks). One interner lives for one file's decode, inside
//! that file's rayon task, so no locking is needed.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::model::{Frame, Op, Sizes, Stack};

#[derive(Default)]
pub struct Interner {
    strs: FxHashMap<Box<str>, Arc<str>>,
    ops: FxHashMap<Arc<str>, Arc<Op>>,
    sizes: FxHashMap<Vec<Vec<i64>>, Sizes>,
    dtypes: FxHashMap<Vec<Arc<str>>, Arc<[Arc<str>]>>,
    stacks: FxHashMap<Vec<Frame>, Stack>,
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

    pub fn sizes(&mut self, sizes: Vec<Vec<i64>>) -> Sizes {
        if let Some(found) = self.sizes.get(&sizes) {
            return found.clone();
        }
        let shared: Sizes = Arc::from(sizes.clone());
        self.sizes.insert(sizes, shared.clone());
        shared
    }

    pub fn dtypes(&mut self, dtypes: Vec<Arc<str>>) -> Arc<[Arc<str>]> {
        if let Some(found) = self.dtypes.get(&dtypes) {
            return found.clone();
        }
        let shared: Arc<[Arc<str>]> = Arc::from(dtypes.clone());
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
}
