//! Pickle dumps (`_dump_nccl_trace`, `_dump_fr_trace`, the watchdog's files) into a
//! [`RankDump`]. The layout follows `FlightRecorderDetail.hpp` `dump()`; every field is
//! optional here because versions 2.2 to 2.10 differ, and the oldest dumps are a bare list.

use std::path::Path;
use std::sync::Arc;

use desync_pickle::{Kind, NodeId, Value};
use rustc_hash::FxHashMap;

use super::intern::{EntryFields, Interner};
use super::limits::{self, MAX_STRING_BYTES};
use super::{Decoded, Notes, RankLists, Shared};
use crate::error::DumpError;
use crate::model::{
    Call, Dtypes, DumpFormat, Entry, Frame, Op, PgConfig, PgStatus, RankDump, Sizes, Stack, State,
};

pub fn decode(bytes: &[u8], rank: u32, path: &Path, shared: &Shared) -> Result<Decoded, DumpError> {
    let pickle = desync_pickle::parse(bytes)?;
    let root = pickle.root();
    let mut notes = Notes::default();
    let mut intern = Interner::new(&shared.streams);
    let rank_lists = &shared.rank_lists;
    let mut frames = NodeCache::default();
    let (version, entries_value) = match root.kind() {
        Kind::Dict => {
            let version = root.get("version");
            let entries = root.get("entries");
            if version.is_none() && entries.is_none() {
                return Err(DumpError::NotADump("a pickled dict without `version` or `entries`"));
            }
            // A version that is not text (a number, a list) is no FR version either.
            let text = match version {
                Some(v) => Some(v.as_str().unwrap_or("")),
                None => None,
            };
            (super::fr_version(text)?, entries)
        }
        // Before PR #118046 the dump was the bare list of entries.
        Kind::List => (None, Some(root)),
        _ => return Err(DumpError::Layout("top level is neither a dict nor a list".into())),
    };
    let mut entries = Vec::new();
    if let Some(list) = entries_value {
        // Newest first, each entry's expanded size counted just before it is decoded (its
        // nodes are then in cache), until the budget runs out: the oldest are dropped.
        let budget = limits::expansion_budget(bytes.len());
        let mut spent = 0u64;
        let n = list.len();
        entries.reserve(n.min(limits::MAX_ENTRIES));
        let mut reasons = Vec::new();
        for i in (0..n).rev() {
            let found = list.index(i).map(fields);
            let over = n - i > limits::MAX_ENTRIES
                || found.as_ref().is_none_or(|f| {
                    spent += f.expanded_size();
                    spent > budget
                });
            let Some(found) = found.filter(|_| !over) else {
                notes.bad_entries += i + 1;
                notes.first_reason = Some(format!(
                    "the oldest {} entries dropped: past {} entries or {budget} values once the pickle's shared (memoized) parts are expanded",
                    i + 1,
                    limits::MAX_ENTRIES,
                ));
                break;
            };
            match entry(&found, &mut intern, &mut frames) {
                Ok(e) => entries.push(e),
                Err(why) => reasons.push(why),
            }
        }
        entries.reverse();
        // Oldest first, as they were before the walk went newest first.
        for why in reasons.into_iter().rev() {
            notes.bad_entry(why);
        }
    }
    let dump = RankDump {
        rank,
        path: path.to_path_buf(),
        format: DumpFormat::Pickle,
        version: intern.str(limits::clip(version.unwrap_or("unknown"))),
        comm_lib_version: root
            .get("comm_lib_version")
            .or_else(|| root.get("nccl_version"))
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(|s| intern.str(limits::clip(s))),
        pg_config: root
            .get("pg_config")
            .map(|v| pg_config(v, &mut intern, rank_lists))
            .unwrap_or_default(),
        pg_status: root.get("pg_status").map(pg_status).unwrap_or_default(),
        entries,
    };
    Ok(Decoded { dump, notes })
}

/// A string field of an entry, refused past the limit (the entry is then skipped).
fn bounded<'s>(field: &str, s: &'s str) -> Result<&'s str, String> {
    if s.len() > MAX_STRING_BYTES {
        return Err(format!(
            "`{field}` is {} bytes long, past the limit of {MAX_STRING_BYTES}",
            s.len()
        ));
    }
    Ok(s)
}

fn pg_config(value: Value<'_>, intern: &mut Interner, rank_lists: &RankLists) -> Vec<PgConfig> {
    value
        .items()
        .map(|(key, cfg)| PgConfig {
            name: intern.str(limits::clip(
                cfg.get("name").and_then(|v| v.as_str()).or(key.as_str()).unwrap_or(""),
            )),
            desc: intern.str(limits::clip(cfg.get("desc").and_then(|v| v.as_str()).unwrap_or(""))),
            ranks: cfg
                .get("ranks")
                .and_then(|v| v.as_str())
                .map(|text| rank_lists.get(text))
                .unwrap_or_default(),
        })
        .collect()
}

fn pg_status(value: Value<'_>) -> Vec<PgStatus> {
    value
        .items()
        .filter_map(|(key, status)| {
            let pg_id = key.as_str()?.parse().ok()?;
            let seq = |name| {
                status.get(name).and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()))
            };
            Some(PgStatus {
                pg_id,
                last_enqueued: super::seq(seq("last_enqueued_collective")),
                last_started: super::seq(seq("last_started_collective")),
                last_completed: super::seq(seq("last_completed_collective")),
            })
        })
        .collect()
}

/// Work done once per pickle node. Pickler memoize strings by value and frames (dicts) by
/// identity (torch's C++ pickler and Python's both), so every entry's op name, group name and
/// description, dtype names and frames are references to a handful of shared nodes: a node's
/// interned value is found by its id, without hashing or comparing its text. Lists (a stack, a
/// dtype list) are fresh per entry but made of those shared nodes, so the list of node ids
/// finds an already interned list without building and comparing it (each entry's ~20 frames
/// were most of the interning cost). A miss falls back to interning by content, so equal values
/// are still the same `Arc` when the pickle did not memoize them.
#[derive(Default)]
struct NodeCache {
    strs: FxHashMap<NodeId, Arc<str>>,
    ops: FxHashMap<NodeId, Arc<Op>>,
    frames: FxHashMap<NodeId, Option<Frame>>,
    stacks: FxHashMap<Box<[NodeId]>, Stack>,
    dtypes: FxHashMap<Box<[NodeId]>, Dtypes>,
    /// The current list's node ids, reused across entries.
    ids: Vec<NodeId>,
}

impl NodeCache {
    /// The interned text of a string node, checked against the limit first.
    fn str(
        &mut self,
        field: &str,
        value: Value<'_>,
        intern: &mut Interner,
    ) -> Result<Arc<str>, String> {
        if let Some(found) = self.strs.get(&value.id()) {
            return Ok(found.clone());
        }
        let text = bounded(field, value.as_str().unwrap_or(""))?;
        let shared = intern.str(text);
        self.strs.insert(value.id(), shared.clone());
        Ok(shared)
    }

    /// The op of a `profiling_name` string node (already checked against the limit).
    fn op(&mut self, value: Value<'_>, text: &str, intern: &mut Interner) -> Arc<Op> {
        self.ops.entry(value.id()).or_insert_with(|| intern.op(text)).clone()
    }

    fn dtypes(&mut self, list: Value<'_>, intern: &mut Interner) -> Result<Dtypes, String> {
        self.ids.clear();
        self.ids.extend(list.iter().filter(|d| d.as_str().is_some()).map(|d| d.id()));
        if let Some(found) = self.dtypes.get(self.ids.as_slice()) {
            return Ok(found.clone());
        }
        let key: Box<[NodeId]> = self.ids.as_slice().into();
        let mut names = Vec::with_capacity(key.len());
        for name in list.iter().filter(|d| d.as_str().is_some()) {
            names.push(self.str("dtypes", name, intern)?);
        }
        let shared = intern.dtypes(names);
        self.dtypes.insert(key, shared.clone());
        Ok(shared)
    }

    fn frame(&mut self, value: Value<'_>, intern: &mut Interner) -> Option<Frame> {
        self.frames
            .entry(value.id())
            .or_insert_with(|| {
                let function = value.get("name")?.as_str()?;
                let file = value.get("filename")?.as_str()?;
                if function.len().max(file.len()) > MAX_STRING_BYTES {
                    return None;
                }
                let (function, file) = (intern.str(function), intern.str(file));
                Some(Frame::new(function, file, value.get("line")?.as_i64()?.try_into().ok()?))
            })
            .clone()
    }

    fn stack(&mut self, list: Value<'_>, intern: &mut Interner) -> Stack {
        self.ids.clear();
        self.ids.extend(list.iter().map(|frame| frame.id()));
        if let Some(found) = self.stacks.get(self.ids.as_slice()) {
            return found.clone();
        }
        let frames = list.iter().filter_map(|frame| self.frame(frame, intern)).collect();
        let stack = intern.stack(frames);
        self.stacks.insert(self.ids.as_slice().into(), stack.clone());
        stack
    }
}

/// One pass over the entry dict: a lookup per field would scan its ~25 keys each time
/// (the profile's top cost at 4,096 ranks).
fn fields(v: Value<'_>) -> Fields<'_> {
    let mut f = Fields { pairs: v.len(), ..Fields::default() };
    for (key, value) in v.items() {
        let Some(key) = key.as_str() else { continue };
        match key {
            "record_id" => f.record_id = value.as_i64(),
            "pg_id" => f.pg_id = value.as_i64(),
            "process_group" => f.process_group = Some(value),
            "collective_seq_id" => f.collective_seq_id = value.as_i64(),
            "p2p_seq_id" => f.p2p_seq_id = value.as_i64(),
            "op_id" => f.op_id = value.as_i64(),
            "profiling_name" => f.profiling_name = Some(value).filter(|v| v.as_str().is_some()),
            "time_created_ns" => f.time_created_ns = value.as_i64(),
            "duration_ms" => f.duration_ms = value.as_f64(),
            "input_sizes" => f.input_sizes = Some(value),
            "output_sizes" => f.output_sizes = Some(value),
            "input_dtypes" => f.input_dtypes = Some(value),
            "output_dtypes" => f.output_dtypes = Some(value),
            "state" => f.state = value.as_str(),
            "time_discovered_started_ns" => f.started = value.as_i64(),
            "time_discovered_completed_ns" => f.completed = value.as_i64(),
            "retired" => f.retired = value.as_bool(),
            "timeout_ms" => f.timeout_ms = value.as_i64(),
            "is_p2p" => f.is_p2p = value.as_bool(),
            "frames" => f.frames = Some(value),
            _ => {}
        }
    }
    f
}

fn entry(f: &Fields<'_>, intern: &mut Interner, cache: &mut NodeCache) -> Result<Entry, String> {
    let name = f.profiling_name.ok_or("entry without `profiling_name`")?;
    let op = cache.op(name, bounded("profiling_name", name.as_str().unwrap_or(""))?, intern);
    // Group name and description: the `process_group` tuple's first two strings, "" without.
    let mut group_str = |i| match f.process_group.and_then(|x| x.index(i)) {
        Some(v) if v.as_str().is_some() => cache.str("process_group", v, intern),
        _ => Ok(intern.str("")),
    };
    let (pg_name, pg_desc) = (group_str(0)?, group_str(1)?);
    let state = f.state.map(|s| bounded("state", s)).transpose()?;
    let stack = f.frames.filter(|frames| !frames.is_empty()).map(|list| cache.stack(list, intern));
    let mut dtypes = |list: Option<Value<'_>>| match list {
        Some(list) => cache.dtypes(list, intern),
        None => Ok(intern.dtypes(Vec::new())),
    };
    let (input_dtypes, output_dtypes) = (dtypes(f.input_dtypes)?, dtypes(f.output_dtypes)?);
    let call = Call {
        pg_id: f.pg_id.unwrap_or(-1),
        pg_name,
        pg_desc,
        is_p2p: f.is_p2p.unwrap_or(op.p2p.is_some()),
        op,
        input_sizes: sizes(f.input_sizes, intern),
        output_sizes: sizes(f.output_sizes, intern),
        input_dtypes,
        output_dtypes,
        timeout_ms: f.timeout_ms.and_then(|t| t.try_into().ok()),
        stack,
    };
    let fields = EntryFields {
        record_id: f.record_id.ok_or("entry without `record_id`")?.max(0) as u64,
        collective_seq_id: f.collective_seq_id.ok_or("entry without `collective_seq_id`")?.max(0)
            as u64,
        p2p_seq_id: f.p2p_seq_id.unwrap_or(0).max(0) as u64,
        op_id: f.op_id.unwrap_or(0).max(0) as u64,
        state: state.map_or(State::Unknown, State::parse),
        time_created_ns: f.time_created_ns.unwrap_or(0),
        time_started_ns: super::discovered(f.started),
        time_completed_ns: super::discovered(f.completed),
        duration_ms: super::duration(f.duration_ms),
        retired: f.retired.unwrap_or(false),
    };
    Ok(intern.entry(call, fields))
}

/// The fields of one entry as found, before validation.
#[derive(Default)]
struct Fields<'p> {
    /// Key/value pairs of the entry dict.
    pairs: usize,
    record_id: Option<i64>,
    pg_id: Option<i64>,
    process_group: Option<Value<'p>>,
    collective_seq_id: Option<i64>,
    p2p_seq_id: Option<i64>,
    op_id: Option<i64>,
    /// A string node.
    profiling_name: Option<Value<'p>>,
    time_created_ns: Option<i64>,
    duration_ms: Option<f64>,
    input_sizes: Option<Value<'p>>,
    output_sizes: Option<Value<'p>>,
    input_dtypes: Option<Value<'p>>,
    output_dtypes: Option<Value<'p>>,
    state: Option<&'p str>,
    started: Option<i64>,
    completed: Option<i64>,
    retired: Option<bool>,
    timeout_ms: Option<i64>,
    is_p2p: Option<bool>,
    frames: Option<Value<'p>>,
}

impl Fields<'_> {
    /// The values the entry expands to, its shared (memoized) parts counted at every use: its
    /// keys, frames, dtypes, shapes and their dimensions. Counting walks no more than it
    /// counts, so the walk over a file stops within [`limits::expansion_budget`]: a list
    /// referenced a million times costs its length at each use and ends the count long
    /// before it is expanded.
    fn expanded_size(&self) -> u64 {
        let len = |v: Option<Value<'_>>| v.map_or(0, |v| v.len() as u64);
        let shapes =
            |v: Option<Value<'_>>| v.map_or(0, |v| v.iter().map(|s| 1 + s.len() as u64).sum());
        1 + self.pairs as u64
            + len(self.frames)
            + len(self.input_dtypes)
            + len(self.output_dtypes)
            + shapes(self.input_sizes)
            + shapes(self.output_sizes)
    }
}

/// Size and dtype lists are interned by content and walked at each use: the expansion budget
/// already bounds those walks, and a per-node memo never hit on real dumps (each entry has
/// its own lists) while costing a tenth of the decoding time.
fn sizes(value: Option<Value<'_>>, intern: &mut Interner) -> Sizes {
    let Some(list) = value else { return intern.sizes(std::iter::empty::<[i64; 0]>()) };
    intern.sizes(list.iter().map(|shape| shape.iter().filter_map(|d| d.as_i64())))
}
