//! The body of a summary, before compression: a header (where the dump came from, the rank's
//! `pg_config`/`pg_status`/versions), the [`Tables`], then the entries column by column.
//!
//! Columns, not rows: each field's values sit together and are stored as differences from the
//! previous entry (record ids, creation times; sequence ids per process group), so deflate
//! sees long runs of small, similar numbers. The times FR records are nanoseconds with
//! polling noise; they are most of what is left after compression. See docs/summaries.md.

use std::path::PathBuf;

use super::codec::{In, Out};
use super::convert::{Record, Tables};
use super::{Origin, SummaryError};
use crate::load::Notes;
use crate::model::{DumpFormat, PgConfig, PgStatus, RankDump};

/// The rank's dump without its entries, plus what the decoder noted.
pub struct Header<'a> {
    pub dump: &'a RankDump,
    pub notes: &'a Notes,
}

const KIND_DUMP: u8 = 0;
const KIND_UNREADABLE: u8 = 1;

pub fn write_origin(out: &mut Out, origin: &Origin, unreadable: Option<&str>) {
    out.byte(if unreadable.is_some() { KIND_UNREADABLE } else { KIND_DUMP });
    out.str(&origin.path.to_string_lossy());
    out.opt_u(origin.rank.map(u64::from));
    if let Some(message) = unreadable {
        out.str(message);
    }
}

/// The origin, and the message when the dump was unreadable (then nothing follows).
pub fn read_origin(r: &mut In<'_>) -> Result<(Origin, Option<String>), SummaryError> {
    let kind = r.byte()?;
    let path = PathBuf::from(r.str()?);
    let rank = r.opt_u()?.map(|v| u32::try_from(v).map_err(|_| r.corrupt("rank too large")));
    let origin = Origin { path, rank: rank.transpose()? };
    match kind {
        KIND_DUMP => Ok((origin, None)),
        KIND_UNREADABLE => Ok((origin, Some(r.str()?.to_owned()))),
        other => Err(r.corrupt(format!("unknown content kind {other}"))),
    }
}

pub fn write_header(out: &mut Out, h: &Header<'_>) {
    let d = h.dump;
    out.byte(match d.format {
        DumpFormat::Pickle => 0,
        DumpFormat::Json => 1,
    });
    out.str(&d.version);
    write_opt_str(out, d.comm_lib_version.as_deref());
    out.u(d.pg_config.len() as u64);
    for pg in &d.pg_config {
        out.str(&pg.name);
        out.str(&pg.desc);
        // Sorted (`RankLists`): deltas are small, mostly 1. Wrapping keeps any order exact.
        out.u(pg.ranks.len() as u64);
        let mut prev = 0u32;
        for &rank in pg.ranks.iter() {
            out.u(u64::from(rank.wrapping_sub(prev)));
            prev = rank;
        }
    }
    out.u(d.pg_status.len() as u64);
    for s in &d.pg_status {
        out.i(s.pg_id);
        out.opt_u(s.last_enqueued);
        out.opt_u(s.last_started);
        out.opt_u(s.last_completed);
    }
    out.u(h.notes.bad_entries as u64);
    write_opt_str(out, h.notes.first_reason.as_deref());
}

/// The header's fields, with `rank_list` sharing member lists across files.
pub struct HeaderFields {
    pub format: DumpFormat,
    pub version: String,
    pub comm_lib_version: Option<String>,
    pub pg_config: Vec<(String, String, Vec<u32>)>,
    pub pg_status: Vec<PgStatus>,
    pub notes: Notes,
}

pub fn read_header(r: &mut In<'_>) -> Result<HeaderFields, SummaryError> {
    let format = match r.byte()? {
        0 => DumpFormat::Pickle,
        1 => DumpFormat::Json,
        other => return Err(r.corrupt(format!("unknown dump format {other}"))),
    };
    let version = r.str()?.to_owned();
    let comm_lib_version = read_opt_str(r)?;
    let mut pg_config = Vec::new();
    for _ in 0..r.count()? {
        let name = r.str()?.to_owned();
        let desc = r.str()?.to_owned();
        let mut ranks = Vec::with_capacity(r.count()?);
        let mut prev = 0u32;
        for _ in 0..ranks.capacity() {
            prev = prev.wrapping_add(r.u32()?);
            ranks.push(prev);
        }
        pg_config.push((name, desc, ranks));
    }
    let mut pg_status = Vec::new();
    for _ in 0..r.count()? {
        pg_status.push(PgStatus {
            pg_id: r.i()?,
            last_enqueued: r.opt_u()?,
            last_started: r.opt_u()?,
            last_completed: r.opt_u()?,
        });
    }
    let bad_entries = usize::try_from(r.u()?).map_err(|_| r.corrupt("entry count too large"))?;
    let first_reason = read_opt_str(r)?;
    let notes = Notes { bad_entries, first_reason };
    Ok(HeaderFields { format, version, comm_lib_version, pg_config, pg_status, notes })
}

impl HeaderFields {
    /// `PgConfig` rows with shared member lists.
    pub fn pg_config(
        &self,
        intern: &mut crate::load::intern::Interner,
        rank_lists: &crate::load::RankLists,
    ) -> Vec<PgConfig> {
        self.pg_config
            .iter()
            .map(|(name, desc, ranks)| PgConfig {
                name: intern.str(name),
                desc: intern.str(desc),
                ranks: rank_lists.get_parsed(ranks),
            })
            .collect()
    }
}

fn write_opt_str(out: &mut Out, s: Option<&str>) {
    match s {
        None => out.byte(0),
        Some(s) => {
            out.byte(1);
            out.str(s);
        }
    }
}

fn read_opt_str(r: &mut In<'_>) -> Result<Option<String>, SummaryError> {
    match r.byte()? {
        0 => Ok(None),
        1 => Ok(Some(r.str()?.to_owned())),
        other => Err(r.corrupt(format!("bad option tag {other}"))),
    }
}

pub fn write_tables(out: &mut Out, t: &Tables) {
    out.u(t.strings.len() as u64);
    for s in &t.strings {
        out.str(s);
    }
    out.u(t.frames.len() as u64);
    for &(function, file, line) in &t.frames {
        out.u(function.into());
        out.u(file.into());
        out.u(line.into());
    }
    write_lists(out, &t.stacks);
    out.u(t.sizes.len() as u64);
    for list in &t.sizes {
        out.u(list.len() as u64);
        for shape in list {
            out.u(shape.len() as u64);
            for &dim in shape {
                out.i(dim);
            }
        }
    }
    write_lists(out, &t.dtypes);
    out.u(t.ops.len() as u64);
    for &op in &t.ops {
        out.u(op.into());
    }
    out.u(t.pgs.len() as u64);
    for &(id, name, desc) in &t.pgs {
        out.i(id);
        out.u(name.into());
        out.u(desc.into());
    }
}

fn write_lists(out: &mut Out, lists: &[Vec<u32>]) {
    out.u(lists.len() as u64);
    for list in lists {
        out.u(list.len() as u64);
        for &i in list {
            out.u(i.into());
        }
    }
}

fn read_lists(r: &mut In<'_>) -> Result<Vec<Vec<u32>>, SummaryError> {
    let mut lists = Vec::with_capacity(r.count()?);
    for _ in 0..lists.capacity() {
        let mut list = Vec::with_capacity(r.count()?);
        for _ in 0..list.capacity() {
            list.push(r.u32()?);
        }
        lists.push(list);
    }
    Ok(lists)
}

pub fn read_tables(r: &mut In<'_>) -> Result<Tables, SummaryError> {
    let mut t = Tables::default();
    for _ in 0..r.count()? {
        t.strings.push(r.str()?.into());
    }
    for _ in 0..r.count()? {
        t.frames.push((r.u32()?, r.u32()?, r.u32()?));
    }
    t.stacks = read_lists(r)?;
    for _ in 0..r.count()? {
        let mut list = Vec::with_capacity(r.count()?);
        for _ in 0..list.capacity() {
            let mut shape = Vec::with_capacity(r.count()?);
            for _ in 0..shape.capacity() {
                shape.push(r.i()?);
            }
            list.push(shape);
        }
        t.sizes.push(list);
    }
    t.dtypes = read_lists(r)?;
    for _ in 0..r.count()? {
        t.ops.push(r.u32()?);
    }
    for _ in 0..r.count()? {
        t.pgs.push((r.i()?, r.u32()?, r.u32()?));
    }
    Ok(t)
}

/// Flag bits of one entry, in the `flags` column.
const RETIRED: u8 = 1 << 2;
const IS_P2P: u8 = 1 << 3;
const HAS_STARTED: u8 = 1 << 4;
const HAS_COMPLETED: u8 = 1 << 5;
const HAS_STACK: u8 = 1 << 6;
const HAS_TIMEOUT: u8 = 1 << 7;
/// The low two bits: `Record::state`.
const STATE_MASK: u8 = 0b11;

/// `duration` column tags: FR's durations are CUDA event times, f32 milliseconds widened to
/// f64, so 4 bytes hold them exactly; anything else keeps all 8.
const NO_DURATION: u8 = 0;
const DURATION_F32: u8 = 1;
const DURATION_F64: u8 = 2;

/// One stream per field, in this order in the file.
#[derive(Default)]
struct Columns {
    record_id: Out,
    pg: Out,
    collective_seq: Out,
    p2p_seq: Out,
    op_id: Out,
    op: Out,
    sizes: Out,
    dtypes: Out,
    flags: Out,
    created: Out,
    started: Out,
    completed: Out,
    duration_tag: Out,
    duration: Out,
    timeout: Out,
    stack: Out,
}

/// The counters that advance per process group, for deltas.
#[derive(Default, Clone, Copy)]
struct PgCursor {
    seq: u64,
    p2p: u64,
    op_id: u64,
}

fn delta(value: u64, prev: &mut u64) -> i64 {
    let d = value.wrapping_sub(*prev) as i64;
    *prev = value;
    d
}

fn undelta(d: i64, prev: &mut u64) -> u64 {
    *prev = prev.wrapping_add(d as u64);
    *prev
}

pub fn write_records(out: &mut Out, records: &[Record]) {
    let mut c = Columns::default();
    let mut record_id = 0u64;
    let mut created = 0u64;
    let mut cursors: Vec<PgCursor> = Vec::new();
    for r in records {
        c.record_id.i(delta(r.record_id, &mut record_id));
        c.pg.u(r.pg.into());
        let pg = r.pg as usize;
        if cursors.len() <= pg {
            cursors.resize(pg + 1, PgCursor::default());
        }
        let cur = &mut cursors[pg];
        c.collective_seq.i(delta(r.collective_seq_id, &mut cur.seq));
        c.p2p_seq.i(delta(r.p2p_seq_id, &mut cur.p2p));
        c.op_id.i(delta(r.op_id, &mut cur.op_id));
        c.op.u(r.op.into());
        c.sizes.u(r.input_sizes.into());
        c.sizes.u(r.output_sizes.into());
        c.dtypes.u(r.input_dtypes.into());
        c.dtypes.u(r.output_dtypes.into());
        let mut flags = r.state & STATE_MASK;
        for (set, bit) in [
            (r.retired, RETIRED),
            (r.is_p2p, IS_P2P),
            (r.time_started_ns.is_some(), HAS_STARTED),
            (r.time_completed_ns.is_some(), HAS_COMPLETED),
            (r.stack.is_some(), HAS_STACK),
            (r.timeout_ms.is_some(), HAS_TIMEOUT),
        ] {
            if set {
                flags |= bit;
            }
        }
        c.flags.byte(flags);
        c.created.i(delta(r.time_created_ns as u64, &mut created));
        // Started after created, completed after started: short differences.
        let created = r.time_created_ns;
        if let Some(t) = r.time_started_ns {
            c.started.i(t.wrapping_sub(created));
        }
        if let Some(t) = r.time_completed_ns {
            c.completed.i(t.wrapping_sub(r.time_started_ns.unwrap_or(created)));
        }
        match r.duration_ms {
            None => c.duration_tag.byte(NO_DURATION),
            Some(d) if f64::from(d as f32).to_bits() == d.to_bits() => {
                c.duration_tag.byte(DURATION_F32);
                c.duration.raw(&(d as f32).to_le_bytes());
            }
            Some(d) => {
                c.duration_tag.byte(DURATION_F64);
                c.duration.raw(&d.to_le_bytes());
            }
        }
        if let Some(t) = r.timeout_ms {
            c.timeout.u(t.into());
        }
        if let Some(s) = r.stack {
            c.stack.u(s.into());
        }
    }
    out.u(records.len() as u64);
    for column in c.all() {
        out.section(column);
    }
}

impl Columns {
    fn all(&self) -> [&Out; 16] {
        [
            &self.record_id,
            &self.pg,
            &self.collective_seq,
            &self.p2p_seq,
            &self.op_id,
            &self.op,
            &self.sizes,
            &self.dtypes,
            &self.flags,
            &self.created,
            &self.started,
            &self.completed,
            &self.duration_tag,
            &self.duration,
            &self.timeout,
            &self.stack,
        ]
    }
}

pub fn read_records(r: &mut In<'_>) -> Result<Vec<Record>, SummaryError> {
    let n = r.u()?;
    // A zlib body of zeros makes millions of one-byte records out of a few kB of file.
    if n > crate::load::limits::MAX_ENTRIES as u64 {
        return Err(r.corrupt(format!(
            "{n} entries, past the limit of {} per dump",
            crate::load::limits::MAX_ENTRIES
        )));
    }
    let mut s: [In<'_>; 16] = std::array::from_fn(|_| In::new(&[]));
    for column in &mut s {
        *column = r.section()?;
    }
    let [
        rid,
        pg,
        seq,
        p2p,
        op_id,
        op,
        sizes,
        dtypes,
        flags,
        created,
        started,
        completed,
        tag,
        dur,
        timeout,
        stack,
    ] = &mut s;
    // Every entry takes at least its flags byte.
    let mut records = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(flags.remaining()));
    let mut record_id = 0u64;
    let mut created_at = 0u64;
    let mut cursors: Vec<PgCursor> = Vec::new();
    for _ in 0..n {
        let record_id = undelta(rid.i()?, &mut record_id);
        let pg_index = pg.u32()?;
        let i = pg_index as usize;
        if cursors.len() <= i {
            // Indices are checked against the table later; this only bounds the allocation.
            if i > records.capacity() + 1024 {
                return Err(pg.corrupt(format!("process group index {i} out of range")));
            }
            cursors.resize(i + 1, PgCursor::default());
        }
        let cur = &mut cursors[i];
        let collective_seq_id = undelta(seq.i()?, &mut cur.seq);
        let p2p_seq_id = undelta(p2p.i()?, &mut cur.p2p);
        let op_id = undelta(op_id.i()?, &mut cur.op_id);
        let op = op.u32()?;
        let (input_sizes, output_sizes) = (sizes.u32()?, sizes.u32()?);
        let (input_dtypes, output_dtypes) = (dtypes.u32()?, dtypes.u32()?);
        let f = flags.byte()?;
        let time_created_ns = undelta(created.i()?, &mut created_at) as i64;
        let time_started_ns = if f & HAS_STARTED != 0 {
            Some(time_created_ns.wrapping_add(started.i()?))
        } else {
            None
        };
        let time_completed_ns = if f & HAS_COMPLETED != 0 {
            Some(time_started_ns.unwrap_or(time_created_ns).wrapping_add(completed.i()?))
        } else {
            None
        };
        let duration_ms = match tag.byte()? {
            NO_DURATION => None,
            DURATION_F32 => {
                Some(f64::from(f32::from_le_bytes(dur.take(4)?.try_into().unwrap_or_default())))
            }
            DURATION_F64 => Some(f64::from_le_bytes(dur.take(8)?.try_into().unwrap_or_default())),
            other => return Err(tag.corrupt(format!("unknown duration tag {other}"))),
        };
        records.push(Record {
            record_id,
            pg: pg_index,
            collective_seq_id,
            p2p_seq_id,
            op_id,
            op,
            input_sizes,
            output_sizes,
            input_dtypes,
            output_dtypes,
            state: f & STATE_MASK,
            retired: f & RETIRED != 0,
            is_p2p: f & IS_P2P != 0,
            time_created_ns,
            time_started_ns,
            time_completed_ns,
            duration_ms,
            timeout_ms: if f & HAS_TIMEOUT != 0 { Some(timeout.u32()?) } else { None },
            stack: if f & HAS_STACK != 0 { Some(stack.u32()?) } else { None },
        });
    }
    if let Some(left) = s.iter().find(|c| !c.is_empty()) {
        return Err(left.corrupt("column has bytes past its last entry"));
    }
    Ok(records)
}
