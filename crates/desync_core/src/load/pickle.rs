//! Pickle dumps (`_dump_nccl_trace`, `_dump_fr_trace`, the watchdog's files) into a
//! [`RankDump`]. The layout follows `FlightRecorderDetail.hpp` `dump()`; every field is
//! optional here because versions 2.2 to 2.10 differ, and the oldest dumps are a bare list.

use std::path::Path;
use std::sync::Arc;

use desync_pickle::{Kind, NodeId, Value};
use rustc_hash::FxHashMap;

use super::intern::Interner;
use super::{Decoded, Notes};
use crate::error::DumpError;
use crate::model::{DumpFormat, Entry, Frame, PgConfig, PgStatus, RankDump, State};

pub fn decode(bytes: &[u8], rank: u32, path: &Path) -> Result<Decoded, DumpError> {
    let pickle = desync_pickle::parse(bytes)?;
    let root = pickle.root();
    let mut notes = Notes::default();
    let mut intern = Interner::default();
    let mut frames = FrameCache::default();
    let (version, entries_value) = match root.kind() {
        Kind::Dict => (root.get("version").and_then(|v| v.as_str()), root.get("entries")),
        // Before PR #118046 the dump was the bare list of entries.
        Kind::List => (None, Some(root)),
        _ => return Err(DumpError::Layout("top level is neither a dict nor a list".into())),
    };
    let mut entries = Vec::new();
    if let Some(list) = entries_value {
        entries.reserve(list.len());
        for item in list.iter() {
            match entry(item, &mut intern, &mut frames) {
                Ok(e) => entries.push(e),
                Err(why) => notes.bad_entry(why),
            }
        }
    }
    let dump = RankDump {
        rank,
        path: path.to_path_buf(),
        format: DumpFormat::Pickle,
        version: intern.str(version.unwrap_or("unknown")),
        comm_lib_version: root
            .get("comm_lib_version")
            .or_else(|| root.get("nccl_version"))
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(|s| intern.str(s)),
        pg_config: root.get("pg_config").map(|v| pg_config(v, &mut intern)).unwrap_or_default(),
        pg_status: root.get("pg_status").map(pg_status).unwrap_or_default(),
        entries,
    };
    Ok(Decoded { dump, notes })
}

fn pg_config(value: Value<'_>, intern: &mut Interner) -> Vec<PgConfig> {
    value
        .items()
        .map(|(key, cfg)| PgConfig {
            name: intern
                .str(cfg.get("name").and_then(|v| v.as_str()).or(key.as_str()).unwrap_or("")),
            desc: intern.str(cfg.get("desc").and_then(|v| v.as_str()).unwrap_or("")),
            ranks: cfg
                .get("ranks")
                .and_then(|v| v.as_str())
                .map(super::parse_rank_list)
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

/// Frames are dicts the pickler memoizes and shares across entries; convert each node once.
#[derive(Default)]
struct FrameCache(FxHashMap<NodeId, Option<Frame>>);

impl FrameCache {
    fn frame(&mut self, value: Value<'_>, intern: &mut Interner) -> Option<Frame> {
        self.0
            .entry(value.id())
            .or_insert_with(|| {
                Some(Frame {
                    function: intern.str(value.get("name")?.as_str()?),
                    file: intern.str(value.get("filename")?.as_str()?),
                    line: value.get("line")?.as_i64()?.try_into().ok()?,
                })
            })
            .clone()
    }
}

fn entry(v: Value<'_>, intern: &mut Interner, cache: &mut FrameCache) -> Result<Entry, String> {
    let int = |name: &str| v.get(name).and_then(|x| x.as_i64());
    let required = |name: &str| int(name).ok_or_else(|| format!("entry without `{name}`"));
    let profiling_name = v
        .get("profiling_name")
        .and_then(|x| x.as_str())
        .ok_or_else(|| "entry without `profiling_name`".to_owned())?;
    let (profiling_name, op) = intern.op(profiling_name);
    let is_p2p = v.get("is_p2p").and_then(|x| x.as_bool()).unwrap_or(op.p2p.is_some());
    // `process_group` is a (name, desc) tuple in pickle.
    let pg = v.get("process_group");
    let pg_name = pg.and_then(|x| x.index(0)).and_then(|x| x.as_str()).unwrap_or("");
    let pg_desc = pg.and_then(|x| x.index(1)).and_then(|x| x.as_str()).unwrap_or("");
    let stack = v.get("frames").filter(|f| !f.is_empty()).map(|list| {
        let frames = list.iter().filter_map(|f| cache.frame(f, intern)).collect();
        intern.stack(frames)
    });
    let time = |name: &str| int(name).filter(|&t| t > 0);
    Ok(Entry {
        record_id: required("record_id")?.max(0) as u64,
        pg_id: int("pg_id").unwrap_or(-1),
        pg_name: intern.str(pg_name),
        pg_desc: intern.str(pg_desc),
        collective_seq_id: required("collective_seq_id")?.max(0) as u64,
        p2p_seq_id: int("p2p_seq_id").unwrap_or(0).max(0) as u64,
        op_id: int("op_id").unwrap_or(0).max(0) as u64,
        profiling_name,
        op,
        input_sizes: intern.sizes(sizes(v.get("input_sizes"))),
        output_sizes: intern.sizes(sizes(v.get("output_sizes"))),
        input_dtypes: dtypes(v.get("input_dtypes"), intern),
        output_dtypes: dtypes(v.get("output_dtypes"), intern),
        state: v.get("state").and_then(|x| x.as_str()).map_or(State::Unknown, State::parse),
        time_created_ns: int("time_created_ns").unwrap_or(0),
        time_started_ns: time("time_discovered_started_ns"),
        time_completed_ns: time("time_discovered_completed_ns"),
        duration_ms: v.get("duration_ms").and_then(|x| x.as_f64()),
        retired: v.get("retired").and_then(|x| x.as_bool()).unwrap_or(false),
        timeout_ms: int("timeout_ms").and_then(|t| t.try_into().ok()),
        is_p2p,
        thread_name: v.get("thread_name").and_then(|x| x.as_str()).map(|s| intern.str(s)),
        stack,
    })
}

fn sizes(value: Option<Value<'_>>) -> Vec<Vec<i64>> {
    let Some(value) = value else { return Vec::new() };
    value.iter().map(|shape| shape.iter().filter_map(|d| d.as_i64()).collect()).collect()
}

fn dtypes(value: Option<Value<'_>>, intern: &mut Interner) -> Arc<[Arc<str>]> {
    let names = value
        .map(|list| list.iter().filter_map(|d| d.as_str()).map(|s| intern.str(s)).collect())
        .unwrap_or_default();
    intern.dtypes(names)
}
