//! JSON dumps (`_dump_nccl_trace_json`, `_dump_fr_trace_json`, the debug server's
//! `fr_trace_json`) into a [`RankDump`]. Typed, borrowing serde structs: parsing into
//! `serde_json::Value` is ~5x slower on large dumps (reference/crates.md).
//!
//! JSON differs from pickle (FlightRecorderDetail.hpp `dump_json`): `pg_status` values are
//! strings ("-1"), there are no frames, absent times are 0 rather than null, `process_group`
//! is a 2-element array and `entries` is omitted when empty.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::intern::{EntryFields, Interner};
use super::limits::{self, MAX_STRING_BYTES};
use super::{Decoded, Notes, Shared};
use crate::error::DumpError;
use crate::model::{Call, DumpFormat, Entry, Frame, PgConfig, PgStatus, RankDump, State};

#[derive(Deserialize)]
struct Dump<'a> {
    #[serde(borrow, default)]
    version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    comm_lib_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    nccl_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pg_config: BTreeMap<Cow<'a, str>, PgConfigJson<'a>>,
    #[serde(borrow, default)]
    pg_status: BTreeMap<Cow<'a, str>, PgStatusJson>,
    /// Parsed one by one (as pickle entries are): a field of the wrong type drops its entry,
    /// not the whole rank.
    #[serde(borrow, default)]
    entries: Vec<&'a serde_json::value::RawValue>,
}

#[derive(Deserialize)]
struct PgConfigJson<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    desc: Cow<'a, str>,
    #[serde(borrow, default)]
    ranks: Cow<'a, str>,
}

#[derive(Deserialize)]
struct PgStatusJson {
    #[serde(default)]
    last_enqueued_collective: Option<Number>,
    #[serde(default)]
    last_started_collective: Option<Number>,
    #[serde(default)]
    last_completed_collective: Option<Number>,
}

/// `pg_status` values are strings in JSON dumps and integers elsewhere.
#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Text(String),
}

impl Number {
    fn value(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Text(s) => s.trim().parse().ok(),
        }
    }
}

#[derive(Deserialize)]
struct EntryJson<'a> {
    record_id: Option<i64>,
    #[serde(default)]
    pg_id: Option<i64>,
    #[serde(borrow, default)]
    process_group: Vec<Cow<'a, str>>,
    collective_seq_id: Option<i64>,
    #[serde(default)]
    p2p_seq_id: Option<i64>,
    #[serde(default)]
    op_id: Option<i64>,
    #[serde(borrow)]
    profiling_name: Option<Cow<'a, str>>,
    #[serde(default)]
    time_created_ns: Option<i64>,
    #[serde(default)]
    duration_ms: Option<f64>,
    #[serde(default)]
    input_sizes: Vec<Vec<i64>>,
    #[serde(default)]
    output_sizes: Vec<Vec<i64>>,
    #[serde(borrow, default)]
    input_dtypes: Vec<Cow<'a, str>>,
    #[serde(borrow, default)]
    output_dtypes: Vec<Cow<'a, str>>,
    #[serde(borrow, default)]
    state: Option<Cow<'a, str>>,
    #[serde(default)]
    time_discovered_started_ns: Option<i64>,
    #[serde(default)]
    time_discovered_completed_ns: Option<i64>,
    #[serde(default)]
    retired: Option<bool>,
    #[serde(default)]
    timeout_ms: Option<i64>,
    #[serde(default)]
    is_p2p: Option<bool>,
    #[serde(borrow, default)]
    frames: Vec<FrameJson<'a>>,
}

#[derive(Deserialize)]
struct FrameJson<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    filename: Cow<'a, str>,
    line: i64,
}

pub fn decode(bytes: &[u8], rank: u32, path: &Path, shared: &Shared) -> Result<Decoded, DumpError> {
    let dump: Dump<'_> = serde_json::from_slice(bytes)?;
    let mut intern = Interner::new(&shared.streams);
    let rank_lists = &shared.rank_lists;
    let mut notes = Notes::default();
    let first = dump.entries.len().saturating_sub(limits::MAX_ENTRIES);
    if first > 0 {
        notes.bad_entries += first;
        notes.first_reason = Some(format!(
            "the oldest {first} entries dropped: past {} entries",
            limits::MAX_ENTRIES
        ));
    }
    let mut entries = Vec::with_capacity(dump.entries.len() - first);
    for (i, raw) in dump.entries.iter().enumerate().skip(first) {
        let parsed = serde_json::from_str::<EntryJson<'_>>(raw.get())
            .map_err(|e| format!("entry {i}: {}", DumpError::from(e)))
            .and_then(|raw| entry(&raw, &mut intern));
        match parsed {
            Ok(e) => entries.push(e),
            Err(why) => notes.bad_entry(why),
        }
    }
    let pg_config = dump
        .pg_config
        .iter()
        .map(|(key, cfg)| PgConfig {
            name: intern.str(limits::clip(cfg.name.as_deref().unwrap_or(key))),
            desc: intern.str(limits::clip(&cfg.desc)),
            ranks: rank_lists.get(&cfg.ranks),
        })
        .collect();
    let pg_status = dump
        .pg_status
        .iter()
        .filter_map(|(key, s)| {
            let seq = |n: &Option<Number>| super::seq(n.as_ref().and_then(Number::value));
            Some(PgStatus {
                pg_id: key.parse().ok()?,
                last_enqueued: seq(&s.last_enqueued_collective),
                last_started: seq(&s.last_started_collective),
                last_completed: seq(&s.last_completed_collective),
            })
        })
        .collect();
    let version = super::fr_version(dump.version.as_deref())?;
    let comm =
        dump.comm_lib_version.as_deref().or(dump.nccl_version.as_deref()).filter(|s| !s.is_empty());
    let dump = RankDump {
        rank,
        path: path.to_path_buf(),
        format: DumpFormat::Json,
        version: intern.str(limits::clip(version.unwrap_or("unknown"))),
        comm_lib_version: comm.map(|s| intern.str(limits::clip(s))),
        pg_config,
        pg_status,
        entries,
    };
    Ok(Decoded { dump, notes })
}

/// Every string of an entry, checked against the limit before anything is kept.
fn check_strings(raw: &EntryJson<'_>) -> Result<(), String> {
    let strings = raw
        .profiling_name
        .iter()
        .chain(&raw.process_group)
        .chain(&raw.input_dtypes)
        .chain(&raw.output_dtypes)
        .chain(&raw.state)
        .chain(raw.frames.iter().flat_map(|f| [&f.name, &f.filename]));
    match strings.map(|s| s.len()).max() {
        Some(n) if n > MAX_STRING_BYTES => {
            Err(format!("a string of {n} bytes, past the limit of {MAX_STRING_BYTES}"))
        }
        _ => Ok(()),
    }
}

fn entry(raw: &EntryJson<'_>, intern: &mut Interner) -> Result<Entry, String> {
    check_strings(raw)?;
    let profiling_name = raw.profiling_name.as_deref().ok_or("entry without `profiling_name`")?;
    let op = intern.op(profiling_name);
    let is_p2p = raw.is_p2p.unwrap_or(op.p2p.is_some());
    let record_id = raw.record_id.ok_or("entry without `record_id`")?;
    let seq = raw.collective_seq_id.ok_or("entry without `collective_seq_id`")?;
    let stack = (!raw.frames.is_empty()).then(|| {
        let frames = raw
            .frames
            .iter()
            .map(|f| {
                let (function, file) = (intern.str(&f.name), intern.str(&f.filename));
                Frame::new(function, file, u32::try_from(f.line).unwrap_or(0))
            })
            .collect();
        intern.stack(frames)
    });
    let dtypes = |list: &[Cow<'_, str>], intern: &mut Interner| {
        let names = list.iter().map(|s| intern.str(s)).collect();
        intern.dtypes(names)
    };
    let call = Call {
        pg_id: raw.pg_id.unwrap_or(-1),
        pg_name: intern.str(raw.process_group.first().map_or("", |s| s)),
        pg_desc: intern.str(raw.process_group.get(1).map_or("", |s| s)),
        is_p2p,
        op,
        input_sizes: intern.sizes(raw.input_sizes.iter().map(|s| s.iter().copied())),
        output_sizes: intern.sizes(raw.output_sizes.iter().map(|s| s.iter().copied())),
        input_dtypes: dtypes(&raw.input_dtypes, intern),
        output_dtypes: dtypes(&raw.output_dtypes, intern),
        timeout_ms: raw.timeout_ms.and_then(|t| t.try_into().ok()),
        stack,
    };
    let fields = EntryFields {
        record_id: record_id.max(0) as u64,
        collective_seq_id: seq.max(0) as u64,
        p2p_seq_id: raw.p2p_seq_id.unwrap_or(0).max(0) as u64,
        op_id: raw.op_id.unwrap_or(0).max(0) as u64,
        state: raw.state.as_deref().map_or(State::Unknown, State::parse),
        time_created_ns: raw.time_created_ns.unwrap_or(0),
        // JSON writes 0, not null, for times never discovered.
        time_started_ns: super::discovered(raw.time_discovered_started_ns),
        time_completed_ns: super::discovered(raw.time_discovered_completed_ns),
        duration_ms: super::duration(raw.duration_ms),
        retired: raw.retired.unwrap_or(false),
    };
    Ok(intern.entry(call, fields))
}
