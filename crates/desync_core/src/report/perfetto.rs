//! Chrome Trace Event JSON (`{"traceEvents":[...]}`) for Perfetto UI and Chrome's trace viewer.
//!
//! Layout: one process per rank (`process_name` "rank N"), one thread per process group
//! (`thread_name` "pg <name> (<desc>)", the same tid on every rank), one complete event
//! (`ph:"X"`) per entry, instant events (`ph:"i"`) where the earliest mismatch and the stuck
//! collective are, and flow events (`ph:"s"`/`"t"`/`"f"`, one id per collective) linking the
//! same collective across ranks around the earliest mismatch.
//!
//! Invariants: timestamps are microseconds since the earliest `time_created_ns` of any rank,
//! so all ranks share one clock base (FR stamps entries with the host's wall clock); slices on
//! one track never overlap (the Perfetto importer drops improperly nested slices, and NCCL
//! collectives overlap once queued, so a slice ends no later than the next one starts and the
//! full duration stays in `args`); events are streamed to the writer one by one, so memory does
//! not grow with ranks x entries.
//!
//! What is written can be narrowed ([`PerfettoOptions`]: ranks, process groups, a window of
//! seqs around the earliest mismatch); `otherData` then says what was left out. A 512-rank job
//! is 300 MB of trace in full, so large jobs are written as [`representatives`] by default.

use std::io::{self, Write};

use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::Analysis;
use crate::diagnose::Position;
use crate::model::{Entry, RankDump, RankSet, format_ranks};

/// What the trace holds; the default writes everything.
#[derive(Debug, Clone, Default)]
pub struct PerfettoOptions {
    /// Only these ranks' processes (and their marks and flows).
    pub ranks: Option<RankSet>,
    /// Only these process groups' tracks, each named by its name or its description.
    pub groups: Option<Vec<String>>,
    /// Only entries within this many seqs of the earliest mismatch in its process group (or
    /// of the stuck collective, without a mismatch); other groups' entries are kept when they
    /// were created in the same stretch of time on that rank.
    pub around_mismatch: Option<u64>,
    /// Why `ranks` is what it is, for the trace's metadata (`representatives`, say).
    pub ranks_reason: Option<String>,
}

/// Past this many loaded ranks `desync export` writes [`representatives`] unless told
/// otherwise: 64 ranks of a 2,000-entry job with stacks are about 40 MB of trace.
pub const REPRESENTATIVE_WORLD: usize = 64;
/// Culprit ranks a representative selection includes at most (the lowest ones).
const REPRESENTATIVE_CULPRITS: usize = 32;

impl PerfettoOptions {
    /// Whether the options name things this analysis has (before any file is opened).
    pub fn check(&self, a: &Analysis) -> Result<(), SelectionError> {
        select(a, self).map(drop)
    }
}

/// One rank per behavioural group (ranks that did the same thing: the diagnosis's groups), the
/// first of each side of the earliest mismatch, and the culprits (at most 32): what a reader
/// needs to see the desync, independent of the world's size.
pub fn representatives(a: &Analysis) -> RankSet {
    let d = &a.diagnosis;
    let mut ranks: Vec<u32> =
        d.groups.iter().filter_map(|g| g.ranks.as_slice().first().copied()).collect();
    if let Some(e) = &d.earliest {
        ranks.extend(e.mismatch.sides.iter().filter_map(|s| s.ranks.as_slice().first().copied()));
    }
    ranks.extend(d.culprit_ranks.as_slice().iter().take(REPRESENTATIVE_CULPRITS));
    let loaded: RankSet = a.trace.ranks.iter().map(|r| r.rank).collect();
    let picked: RankSet = ranks.into_iter().filter(|&r| loaded.contains(r)).collect();
    if picked.is_empty() {
        return loaded.as_slice().first().map(|&r| RankSet::new(vec![r])).unwrap_or_default();
    }
    picked
}

/// The options resolved against one analysis.
struct Selection {
    ranks: Option<RankSet>,
    pgs: Option<rustc_hash::FxHashSet<std::sync::Arc<str>>>,
    /// Per loaded rank (by index into `trace.ranks`): the `time_created_ns` span kept.
    window: Option<Vec<Option<(i64, i64)>>>,
}

impl Selection {
    fn rank(&self, rank: u32) -> bool {
        self.ranks.as_ref().is_none_or(|r| r.contains(rank))
    }

    fn pg(&self, name: &str) -> bool {
        self.pgs.as_ref().is_none_or(|p| p.contains(name))
    }

    fn entry(&self, index: usize, e: &Entry) -> bool {
        self.pg(e.pg_name())
            && self.window.as_ref().is_none_or(|w| {
                w[index].is_some_and(|(lo, hi)| (lo..=hi).contains(&e.created_ns()))
            })
    }
}

/// Why `--around-mismatch` or `--groups` cannot be honoured.
#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    #[error(
        "--around-mismatch: the analysis found no mismatch and no stuck collective to centre on"
    )]
    NothingToCentreOn,
    #[error("--groups: no process group is named or described {0:?} (known: {1})")]
    UnknownGroup(String, String),
}

fn select(a: &Analysis, options: &PerfettoOptions) -> Result<Selection, SelectionError> {
    let t = &a.trace;
    let pgs = match &options.groups {
        None => None,
        Some(names) => {
            let mut set = rustc_hash::FxHashSet::default();
            for name in names {
                let found: Vec<_> = t
                    .process_groups
                    .iter()
                    .filter(|pg| *pg.name == **name || *pg.desc == **name)
                    .map(|pg| pg.name.clone())
                    .collect();
                if found.is_empty() {
                    let mut known: Vec<String> = t
                        .process_groups
                        .iter()
                        .take(8)
                        .map(crate::model::ProcessGroup::label)
                        .collect();
                    if t.process_groups.len() > known.len() {
                        known.push(format!("{} more", t.process_groups.len() - known.len()));
                    }
                    return Err(SelectionError::UnknownGroup(name.clone(), known.join(", ")));
                }
                set.extend(found);
            }
            Some(set)
        }
    };
    let window = match options.around_mismatch {
        None => None,
        Some(n) => {
            let (pg, seq) = a
                .diagnosis
                .earliest
                .as_ref()
                .map(|e| (e.mismatch.pg, e.mismatch.seq))
                .or(a.diagnosis.stuck_at)
                .ok_or(SelectionError::NothingToCentreOn)?;
            let name = &t.process_groups[pg].name;
            let (lo, hi) = (seq.saturating_sub(n), seq.saturating_add(n));
            let in_pg = |e: &&Entry| e.pg_name() == name && !e.is_p2p();
            // Per rank: from the first entry of the window in that group to the last one (or
            // to the rank's end, when it never got past the window).
            let spans: Vec<Option<(i64, i64)>> = t
                .ranks
                .iter()
                .map(|dump| {
                    let mut window = dump
                        .entries
                        .iter()
                        .filter(in_pg)
                        .filter(|e| (lo..=hi).contains(&e.collective_seq_id));
                    let first = window.next()?.created_ns();
                    let past = dump.entries.iter().filter(in_pg).any(|e| e.collective_seq_id > hi);
                    let last = if past {
                        window.map(Entry::created_ns).max().unwrap_or(first)
                    } else {
                        i64::MAX
                    };
                    Some((first, last))
                })
                .collect();
            // Ranks without an entry in the window (outside the group, or gone before it):
            // the stretch of time the window covers on the ranks that have one.
            let known: Vec<(i64, i64)> = spans.iter().flatten().copied().collect();
            let fallback = (!known.is_empty()).then(|| {
                let lo = known.iter().map(|s| s.0).min().unwrap_or(0);
                let hi =
                    known.iter().map(|s| s.1).filter(|&h| h < i64::MAX).max().unwrap_or(i64::MAX);
                (lo, hi)
            });
            Some(spans.into_iter().map(|s| s.or(fallback)).collect())
        }
    };
    Ok(Selection { ranks: options.ranks.clone(), pgs, window })
}

/// Width of a slice whose start and end were not recorded (Gloo records neither): visible
/// when zoomed in, without claiming the collective ran for any real time.
const UNKNOWN_DUR_NS: i64 = 20_000;
/// Collectives linked by flows on each side of the earliest mismatch.
const FLOW_CONTEXT: u64 = 2;

#[derive(Serialize)]
struct Event<'a, A: Serialize> {
    name: &'a str,
    cat: &'a str,
    ph: &'a str,
    pid: u32,
    tid: u32,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    /// Instant scope (`t`: thread).
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    /// Flow binding point: `e` binds a flow end to the enclosing slice.
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'a str>,
    args: A,
}

impl<'a, A: Serialize> Event<'a, A> {
    fn new(name: &'a str, cat: &'a str, ph: &'a str, pid: u32, tid: u32, ts: f64, args: A) -> Self {
        Self { name, cat, ph, pid, tid, ts, dur: None, s: None, id: None, bp: None, args }
    }
}

#[derive(Serialize)]
struct SliceArgs<'a> {
    seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    p2p_seq: Option<u64>,
    op: &'a str,
    pg: &'a str,
    input_sizes: &'a [Vec<i64>],
    output_sizes: &'a [Vec<i64>],
    input_dtypes: &'a [std::sync::Arc<str>],
    output_dtypes: &'a [std::sync::Arc<str>],
    state: &'static str,
    record_id: u64,
    /// The recorded duration, when the slice had to be shortened to keep the track nested.
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded_dur_us: Option<f64>,
    /// Neither start nor completion was recorded (Gloo): the slice has a nominal width.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dur_unknown: bool,
    /// The innermost user frame (`file:line in function`), then the library path below it.
    #[serde(skip_serializing_if = "Option::is_none")]
    call_site: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<String>,
    /// The recorded Python stack, innermost first, one frame per line.
    #[serde(skip_serializing_if = "Option::is_none")]
    stack: Option<String>,
}

/// Frames kept in a slice's stack argument (deeper ones are counted, not listed).
const MAX_STACK_FRAMES: usize = 64;

fn frame_text(f: &crate::model::Frame) -> String {
    format!("{}:{} in {}", f.file, f.line, f.function)
}

fn stack_text(e: &Entry) -> Option<String> {
    let stack = e.stack().filter(|s| !s.is_empty())?;
    let mut lines: Vec<String> = stack.iter().take(MAX_STACK_FRAMES).map(frame_text).collect();
    if stack.len() > MAX_STACK_FRAMES {
        lines.push(format!("… {} more frame(s)", stack.len() - MAX_STACK_FRAMES));
    }
    Some(lines.join("\n"))
}

/// Streams events as elements of the `traceEvents` array.
struct Sink<'w> {
    out: &'w mut dyn Write,
    first: bool,
}

impl Sink<'_> {
    fn event<A: Serialize>(&mut self, e: &Event<'_, A>) -> io::Result<()> {
        self.out.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut *self.out, e).map_err(io::Error::from)
    }
}

/// Clock base and track ids shared by every rank.
struct Tracks {
    base_ns: i64,
    /// pg name -> tid; tids follow `Trace::process_groups` (plus names only entries know).
    tid: FxHashMap<std::sync::Arc<str>, (u32, String)>,
}

impl Tracks {
    fn ts(&self, e: &Entry) -> f64 {
        us(self.ts_ns(e))
    }

    /// Nanoseconds since the clock base; arithmetic stays in integers so `ts`/`dur` print
    /// as exact microseconds (no `57.26999999999998`).
    fn ts_ns(&self, e: &Entry) -> i64 {
        e.created_ns().max(self.base_ns) - self.base_ns
    }

    fn tid(&self, e: &Entry) -> u32 {
        self.tid.get(e.pg_name()).map_or(0, |t| t.0)
    }
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

/// Writes the trace `options` select; a selection that names nothing real is an error before
/// anything is written.
pub fn write_perfetto(
    a: &Analysis,
    options: &PerfettoOptions,
    out: &mut dyn Write,
) -> Result<(), PerfettoError> {
    let selection = select(a, options)?;
    write_selected(a, options, &selection, out)?;
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum PerfettoError {
    #[error(transparent)]
    Selection(#[from] SelectionError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What the trace leaves out, for `otherData`.
#[derive(Serialize)]
struct Omitted {
    ranks_written: String,
    ranks_written_count: usize,
    ranks_left_out: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    ranks_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    process_groups: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    around_mismatch: Option<u64>,
}

fn write_selected(
    a: &Analysis,
    options: &PerfettoOptions,
    sel: &Selection,
    out: &mut dyn Write,
) -> io::Result<()> {
    let t = &a.trace;
    let all = || t.ranks.iter().flat_map(|r| &r.entries);
    let base_ns = all().map(Entry::created_ns).filter(|&x| x > 0).min().unwrap_or(0);
    let mut tid: FxHashMap<std::sync::Arc<str>, (u32, String)> = t
        .process_groups
        .iter()
        .enumerate()
        .map(|(i, pg)| (pg.name.clone(), (i as u32 + 1, pg.label())))
        .collect();
    for e in all() {
        let next = tid.len() as u32 + 1;
        tid.entry(e.pg_name().clone()).or_insert_with(|| (next, format!("pg {}", e.pg_name())));
    }
    let tracks = Tracks { base_ns, tid };

    let written: Vec<u32> = t.ranks.iter().map(|r| r.rank).filter(|&r| sel.rank(r)).collect();
    let omitted = Omitted {
        ranks_written: format_ranks(&written),
        ranks_written_count: written.len(),
        ranks_left_out: t.ranks.len() - written.len(),
        ranks_reason: options.ranks_reason.clone(),
        process_groups: sel.pgs.as_ref().map(|p| {
            let mut names: Vec<String> = p.iter().map(ToString::to_string).collect();
            names.sort();
            names
        }),
        around_mismatch: options.around_mismatch,
    };
    write!(
        out,
        "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"producer\":\"desync {}\",\"verdict\":{},\"clock_base_ns\":{base_ns},\"selection\":{}}},\"traceEvents\":[",
        env!("CARGO_PKG_VERSION"),
        serde_json::to_string(a.diagnosis.category.as_str())?,
        serde_json::to_string(&omitted)?,
    )?;
    let mut sink = Sink { out, first: true };
    for (index, dump) in t.ranks.iter().enumerate().filter(|(_, d)| sel.rank(d.rank)) {
        rank_events(&mut sink, &tracks, dump, |e| sel.entry(index, e))?;
    }
    for &r in t.missing_ranks.iter().filter(|&&r| sel.rank(r)) {
        let name = format!("rank {r} (no dump)");
        sink.event(&Event::new(
            "process_name",
            "__metadata",
            "M",
            r,
            0,
            0.0,
            NameArg { name: &name },
        ))?;
    }
    mismatch_events(&mut sink, &tracks, a, sel)?;
    stuck_events(&mut sink, &tracks, a, sel)?;
    flow_events(&mut sink, &tracks, a, sel)?;
    sink.out.write_all(b"\n]}\n")
}

#[derive(Serialize)]
struct NameArg<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct SortArg {
    sort_index: u32,
}

fn rank_events(
    sink: &mut Sink<'_>,
    tracks: &Tracks,
    dump: &RankDump,
    keep: impl Fn(&Entry) -> bool,
) -> io::Result<()> {
    let pid = dump.rank;
    let name = format!("rank {pid}");
    sink.event(&Event::new(
        "process_name",
        "__metadata",
        "M",
        pid,
        0,
        0.0,
        NameArg { name: &name },
    ))?;
    sink.event(&Event::new(
        "process_sort_index",
        "__metadata",
        "M",
        pid,
        0,
        0.0,
        SortArg { sort_index: pid },
    ))?;
    let kept: Vec<&Entry> = dump.entries.iter().filter(|e| keep(e)).collect();
    let mut tids: Vec<(u32, &str)> = kept
        .iter()
        .filter_map(|e| tracks.tid.get(e.pg_name()).map(|(tid, label)| (*tid, label.as_str())))
        .collect();
    tids.sort_unstable();
    tids.dedup();
    for (tid, label) in tids {
        sink.event(&Event::new(
            "thread_name",
            "__metadata",
            "M",
            pid,
            tid,
            0.0,
            NameArg { name: label },
        ))?;
        sink.event(&Event::new(
            "thread_sort_index",
            "__metadata",
            "M",
            pid,
            tid,
            0.0,
            SortArg { sort_index: tid },
        ))?;
    }
    // Per track in time order, so each slice can be cut at the next one's start.
    let mut order: Vec<(u32, i64, u64, &Entry)> =
        kept.iter().map(|&e| (tracks.tid(e), e.created_ns(), e.record_id, e)).collect();
    order.sort_unstable_by_key(|&(tid, ts, record, _)| (tid, ts, record));
    for (i, &(tid, _, _, e)) in order.iter().enumerate() {
        let ts = tracks.ts_ns(e);
        let recorded = recorded_dur_ns(e);
        let next = order.get(i + 1).filter(|n| n.0 == tid).map(|n| tracks.ts_ns(n.3));
        let want = recorded.unwrap_or(UNKNOWN_DUR_NS);
        let dur = next.map_or(want, |n| want.min(n - ts)).max(0);
        let cut = dur != want;
        let args = SliceArgs {
            seq: e.collective_seq_id,
            p2p_seq: e.is_p2p().then_some(e.p2p_seq_id),
            op: &e.op().profiling_name,
            pg: tracks.tid.get(e.pg_name()).map_or("", |t| t.1.as_str()),
            input_sizes: e.input_sizes(),
            output_sizes: e.output_sizes(),
            input_dtypes: e.input_dtypes(),
            output_dtypes: e.output_dtypes(),
            state: e.state.as_str(),
            record_id: e.record_id,
            recorded_dur_us: recorded.filter(|_| cut).map(us),
            dur_unknown: recorded.is_none(),
            call_site: e.call_site().map(frame_text),
            via: e.library_path(),
            stack: stack_text(e),
        };
        let name =
            e.op().profiling_name.split_once(':').map_or(&*e.op().profiling_name, |(_, rest)| rest);
        let cat = if e.is_p2p() { "p2p" } else { "collective" };
        let mut ev = Event::new(name, cat, "X", pid, tid, us(ts), args);
        ev.dur = Some(us(dur));
        sink.event(&ev)?;
    }
    Ok(())
}

/// completed - created when known, else started - created (it ran at least that long before
/// the dump), else unknown.
fn recorded_dur_ns(e: &Entry) -> Option<i64> {
    let end = e.completed_ns().or(e.started_ns())?;
    (end >= e.created_ns() && e.created_ns() > 0).then(|| end - e.created_ns())
}

#[derive(Serialize)]
struct MarkArgs<'a> {
    verdict: &'a str,
    kind: &'a str,
    role: &'a str,
    issued: bool,
    headline: &'a str,
}

/// An instant on each rank of the earliest mismatch: at its entry there, or, for ranks that
/// never issued it, at their last entry in that group (where they went instead).
fn mismatch_events(
    sink: &mut Sink<'_>,
    tracks: &Tracks,
    a: &Analysis,
    sel: &Selection,
) -> io::Result<()> {
    let Some(e) = &a.diagnosis.earliest else { return Ok(()) };
    let m = &e.mismatch;
    if !sel.pg(&a.trace.process_groups[m.pg].name) {
        return Ok(());
    }
    let g = &a.alignment.groups[m.pg];
    let name = format!("earliest mismatch: {} seq {}", a.trace.process_groups[m.pg].label(), m.seq);
    let kind = m.kind.as_str();
    for (i, side) in m.sides.iter().enumerate() {
        let role = if i == e.reference {
            "reference"
        } else if e.departed.contains(&i) {
            "departed"
        } else {
            "other"
        };
        for &rank in side.ranks.as_slice().iter().filter(|&&r| sel.rank(r)) {
            let (Some(dump), Some(stream)) = (a.trace.rank(rank), g.stream(rank)) else { continue };
            let at = g.entries_at(&a.trace, rank, m.seq);
            let issued = !at.is_empty();
            let Some(entry) = at
                .first()
                .copied()
                .or_else(|| stream.entries.last().map(|&i| &dump.entries[i as usize]))
            else {
                continue;
            };
            let args = MarkArgs {
                verdict: a.diagnosis.category.as_str(),
                kind,
                role,
                issued,
                headline: &a.diagnosis.headline,
            };
            let mut ev =
                Event::new(&name, "mismatch", "i", rank, tracks.tid(entry), tracks.ts(entry), args);
            ev.s = Some("t");
            sink.event(&ev)?;
        }
    }
    Ok(())
}

/// An instant on each stuck rank at the collective it waits in.
fn stuck_events(
    sink: &mut Sink<'_>,
    tracks: &Tracks,
    a: &Analysis,
    sel: &Selection,
) -> io::Result<()> {
    for group in a.diagnosis.groups.iter().filter(|g| g.stuck) {
        let Position::At(at) = &group.position else { continue };
        if !sel.pg(&a.trace.process_groups[at.pg].name) {
            continue;
        }
        let g = &a.alignment.groups[at.pg];
        let name = format!("stuck: {} seq {}", at.op, at.seq);
        let waiting = group.waiting_for.to_string();
        for &rank in group.ranks.as_slice().iter().filter(|&&r| sel.rank(r)) {
            let Some(entry) = g.entries_at(&a.trace, rank, at.seq).last().copied() else {
                continue;
            };
            let args = StuckArgs {
                waiting_for: &waiting,
                culprit: group.culprit,
                verdict: a.diagnosis.category.as_str(),
                headline: &a.diagnosis.headline,
            };
            let mut ev =
                Event::new(&name, "stuck", "i", rank, tracks.tid(entry), tracks.ts(entry), args);
            ev.s = Some("t");
            sink.event(&ev)?;
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct StuckArgs<'a> {
    waiting_for: &'a str,
    culprit: bool,
    verdict: &'a str,
    headline: &'a str,
}

#[derive(Serialize)]
struct FlowArgs {
    seq: u64,
}

/// One flow per collective seq around the earliest mismatch, through every rank that issued
/// it, in creation order: where the arrows bend is where ranks stopped agreeing.
fn flow_events(
    sink: &mut Sink<'_>,
    tracks: &Tracks,
    a: &Analysis,
    sel: &Selection,
) -> io::Result<()> {
    let Some(earliest) = &a.diagnosis.earliest else { return Ok(()) };
    let mismatch = &earliest.mismatch;
    if !sel.pg(&a.trace.process_groups[mismatch.pg].name) {
        return Ok(());
    }
    let group = &a.alignment.groups[mismatch.pg];
    let from = group.seqs.partition_point(|&s| s < mismatch.seq.saturating_sub(FLOW_CONTEXT));
    let mut id = 0u64;
    for &seq in group.seqs[from..].iter().take_while(|&&s| s <= mismatch.seq + FLOW_CONTEXT) {
        let mut hops: Vec<(f64, u32, u32)> = group
            .streams
            .iter()
            .filter(|stream| sel.rank(stream.rank))
            .filter_map(|stream| {
                let entry = group.entries_at(&a.trace, stream.rank, seq).first().copied()?;
                Some((tracks.ts(entry), stream.rank, tracks.tid(entry)))
            })
            .collect();
        if hops.len() < 2 {
            continue;
        }
        hops.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        id += 1;
        let name = format!("seq {seq}");
        let last = hops.len() - 1;
        for (i, &(ts, rank, tid)) in hops.iter().enumerate() {
            let ph = match i {
                0 => "s",
                i if i == last => "f",
                _ => "t",
            };
            let mut ev = Event::new(&name, "flow", ph, rank, tid, ts, FlowArgs { seq });
            ev.id = Some(id);
            if i == last {
                ev.bp = Some("e");
            }
            sink.event(&ev)?;
        }
    }
    Ok(())
}
