//! [`Entry`] <-> [`Record`]: the only code of the summary that knows `Entry`'s fields and the
//! shared types inside it (`Op`, `Frame`, `Sizes`, `Stack`). Everything repeated (strings,
//! frames, stacks, size and dtype lists, ops, process groups) goes into [`Tables`] once per
//! file; a record holds indices into them and the per-entry numbers.
//!
//! Reading builds entries through the loaders' [`Interner`], so a summarized dump shares its
//! `Arc`s exactly as a decoded one does.

use std::num::NonZeroI64;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::load::intern::{EntryFields, Interner};
use crate::model::{Call, Entry, Frame, Op, Sizes, Stack, State};

/// One entry as numbers; `u32` fields index [`Tables`].
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub record_id: u64,
    /// Index into `Tables::pgs`.
    pub pg: u32,
    pub collective_seq_id: u64,
    pub p2p_seq_id: u64,
    pub op_id: u64,
    /// Index into `Tables::ops`.
    pub op: u32,
    /// Indices into `Tables::sizes`.
    pub input_sizes: u32,
    pub output_sizes: u32,
    /// Indices into `Tables::dtypes`.
    pub input_dtypes: u32,
    pub output_dtypes: u32,
    /// 0 scheduled, 1 started, 2 completed, 3 unknown.
    pub state: u8,
    pub retired: bool,
    pub is_p2p: bool,
    pub time_created_ns: i64,
    pub time_started_ns: Option<i64>,
    pub time_completed_ns: Option<i64>,
    pub duration_ms: Option<f64>,
    pub timeout_ms: Option<u32>,
    /// Index into `Tables::stacks`.
    pub stack: Option<u32>,
}

/// The values entries share, each stored once; indices are positions.
#[derive(Debug, Default, PartialEq)]
pub struct Tables {
    pub strings: Vec<Arc<str>>,
    /// (function, file) as string indices, and the line.
    pub frames: Vec<(u32, u32, u32)>,
    /// Frame indices, innermost first.
    pub stacks: Vec<Vec<u32>>,
    pub sizes: Vec<Vec<Vec<i64>>>,
    /// String indices.
    pub dtypes: Vec<Vec<u32>>,
    /// `profiling_name` string indices: an `Op` is parsed from its name alone.
    pub ops: Vec<u32>,
    /// (`pg_id`, name, desc), names as string indices.
    pub pgs: Vec<(i64, u32, u32)>,
}

/// Builds [`Tables`] while entries are turned into records.
#[derive(Default)]
pub struct TableBuilder {
    pub tables: Tables,
    strings: FxHashMap<Arc<str>, u32>,
    frames: FxHashMap<(u32, u32, u32), u32>,
    stacks: FxHashMap<Stack, u32>,
    sizes: FxHashMap<Sizes, u32>,
    dtypes: FxHashMap<Arc<[Arc<str>]>, u32>,
    ops: FxHashMap<Arc<str>, u32>,
    pgs: FxHashMap<(i64, Arc<str>, Arc<str>), u32>,
}

/// The index of `key` in `table`, appending `make()` the first time it is seen.
fn slot<K: std::hash::Hash + Eq, T>(
    map: &mut FxHashMap<K, u32>,
    table: &mut Vec<T>,
    key: K,
    make: impl FnOnce() -> T,
) -> u32 {
    *map.entry(key).or_insert_with(|| {
        table.push(make());
        (table.len() - 1) as u32
    })
}

impl TableBuilder {
    fn string(&mut self, s: &Arc<str>) -> u32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        slot(&mut self.strings, &mut self.tables.strings, s.clone(), || s.clone())
    }

    fn stack(&mut self, stack: &Stack) -> u32 {
        if let Some(&i) = self.stacks.get(stack) {
            return i;
        }
        let frames = stack
            .iter()
            .map(|f| {
                let key = (self.string(&f.function), self.string(&f.file), f.line);
                slot(&mut self.frames, &mut self.tables.frames, key, || key)
            })
            .collect();
        slot(&mut self.stacks, &mut self.tables.stacks, stack.clone(), || frames)
    }

    fn sizes(&mut self, sizes: &Sizes) -> u32 {
        if let Some(&i) = self.sizes.get(sizes) {
            return i;
        }
        slot(&mut self.sizes, &mut self.tables.sizes, sizes.clone(), || sizes.to_vec())
    }

    fn dtypes(&mut self, dtypes: &Arc<[Arc<str>]>) -> u32 {
        if let Some(&i) = self.dtypes.get(dtypes) {
            return i;
        }
        let names = dtypes.iter().map(|d| self.string(d)).collect();
        slot(&mut self.dtypes, &mut self.tables.dtypes, dtypes.clone(), || names)
    }

    fn op(&mut self, op: &Op) -> u32 {
        if let Some(&i) = self.ops.get(&op.profiling_name) {
            return i;
        }
        let name = self.string(&op.profiling_name);
        slot(&mut self.ops, &mut self.tables.ops, op.profiling_name.clone(), || name)
    }

    fn pg(&mut self, pg_id: i64, name: &Arc<str>, desc: &Arc<str>) -> u32 {
        let key = (pg_id, name.clone(), desc.clone());
        if let Some(&i) = self.pgs.get(&key) {
            return i;
        }
        let row = (pg_id, self.string(name), self.string(desc));
        slot(&mut self.pgs, &mut self.tables.pgs, key, || row)
    }

    /// One entry as a record, its shared values added to the tables.
    pub fn record(&mut self, e: &Entry) -> Record {
        Record {
            record_id: e.record_id,
            pg: self.pg(e.pg_id(), e.pg_name(), e.pg_desc()),
            collective_seq_id: e.collective_seq_id,
            p2p_seq_id: e.p2p_seq_id,
            op_id: e.op_id,
            op: self.op(e.op()),
            input_sizes: self.sizes(e.input_sizes()),
            output_sizes: self.sizes(e.output_sizes()),
            input_dtypes: self.dtypes(e.input_dtypes()),
            output_dtypes: self.dtypes(e.output_dtypes()),
            state: match e.state {
                State::Scheduled => 0,
                State::Started => 1,
                State::Completed => 2,
                State::Unknown => 3,
            },
            retired: e.retired,
            is_p2p: e.is_p2p(),
            time_created_ns: e.created_ns(),
            time_started_ns: e.started_ns(),
            time_completed_ns: e.completed_ns(),
            duration_ms: e.duration_ms().map(f64::from),
            timeout_ms: e.timeout_ms(),
            stack: e.stack().map(|s| self.stack(s)),
        }
    }
}

/// [`Tables`] turned back into the shared values entries hold.
pub struct Resolved {
    pgs: Vec<(i64, Arc<str>, Arc<str>)>,
    ops: Vec<Arc<Op>>,
    sizes: Vec<Sizes>,
    dtypes: Vec<Arc<[Arc<str>]>>,
    stacks: Vec<Stack>,
}

/// Looks up `i` in `table`; an index past the end is a corrupt summary.
fn at<T: Clone>(table: &[T], i: u32, what: &str) -> Result<T, String> {
    table.get(i as usize).cloned().ok_or_else(|| format!("{what} index {i} out of range"))
}

impl Resolved {
    pub fn new(t: &Tables, intern: &mut Interner) -> Result<Self, String> {
        let strings: Vec<Arc<str>> = t.strings.iter().map(|s| intern.str(s)).collect();
        let s = |i: u32| at(&strings, i, "string");
        let frames = t
            .frames
            .iter()
            .map(|&(function, file, line)| Ok(Frame::new(s(function)?, s(file)?, line)))
            .collect::<Result<Vec<_>, String>>()?;
        let mut stacks = Vec::with_capacity(t.stacks.len());
        for stack in &t.stacks {
            let stack = stack.iter().map(|&f| at(&frames, f, "frame")).collect::<Result<_, _>>()?;
            stacks.push(intern.stack(stack));
        }
        let mut dtypes = Vec::with_capacity(t.dtypes.len());
        for list in &t.dtypes {
            let names = list.iter().map(|&i| s(i)).collect::<Result<_, _>>()?;
            dtypes.push(intern.dtypes(names));
        }
        let ops = t.ops.iter().map(|&i| Ok(intern.op(&s(i)?))).collect::<Result<_, String>>()?;
        let pgs = t
            .pgs
            .iter()
            .map(|&(id, name, desc)| Ok((id, s(name)?, s(desc)?)))
            .collect::<Result<_, String>>()?;
        let sizes = t.sizes.iter().map(|list| intern.sizes(list.clone())).collect();
        Ok(Self { pgs, ops, sizes, dtypes, stacks })
    }

    /// One record back as an entry; its shared part is interned like the loaders do.
    pub fn entry(&self, r: &Record, intern: &mut Interner) -> Result<Entry, String> {
        let (pg_id, pg_name, pg_desc) = at(&self.pgs, r.pg, "process group")?;
        let call = Call {
            op: at(&self.ops, r.op, "op")?,
            pg_id,
            pg_name,
            pg_desc,
            input_sizes: at(&self.sizes, r.input_sizes, "sizes")?,
            output_sizes: at(&self.sizes, r.output_sizes, "sizes")?,
            input_dtypes: at(&self.dtypes, r.input_dtypes, "dtypes")?,
            output_dtypes: at(&self.dtypes, r.output_dtypes, "dtypes")?,
            is_p2p: r.is_p2p,
            timeout_ms: r.timeout_ms,
            stack: r.stack.map(|i| at(&self.stacks, i, "stack")).transpose()?,
        };
        let fields = EntryFields {
            record_id: r.record_id,
            collective_seq_id: r.collective_seq_id,
            p2p_seq_id: r.p2p_seq_id,
            op_id: r.op_id,
            state: match r.state {
                0 => State::Scheduled,
                1 => State::Started,
                2 => State::Completed,
                _ => State::Unknown,
            },
            time_created_ns: r.time_created_ns,
            time_started_ns: r.time_started_ns.and_then(NonZeroI64::new),
            time_completed_ns: r.time_completed_ns.and_then(NonZeroI64::new),
            // The format keeps an f64 (older dumps' doubles); an entry holds FR's own f32.
            duration_ms: r.duration_ms.map(|d| d as f32),
            retired: r.retired,
        };
        Ok(intern.entry(call, fields))
    }
}
