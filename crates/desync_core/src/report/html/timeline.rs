//! The timeline's data: per process group, lanes of collectives along the sequence-id axis,
//! embedded in the HTML report as one JSON blob and drawn by `timeline.js`.
//!
//! It must stay small and fast at 4,096 ranks x 2,000 entries, so it grows with what differs,
//! not with ranks x entries:
//! - up to [`HtmlOptions::rank_lanes`] members a lane is one rank (people want to see "rank 3");
//!   past that a lane is one stream class (ranks with identical streams, from the alignment),
//!   labelled with its rank range, and at most [`HtmlOptions::class_lanes`] of them are drawn,
//!   the ones holding culprits first;
//! - only the interesting seqs become columns: the last [`HtmlOptions::tail_seqs`] and a window
//!   around the earliest mismatch, where the job is stuck and the first few other mismatches;
//!   a skipped run becomes one gap column that says how many seqs it stands for;
//! - what a collective looked like (op, sizes, dtypes, state, stack) is interned once in
//!   `details`; a cell is a `(column, detail)` pair.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::HtmlOptions;
use crate::Analysis;
use crate::align::{GroupAlignment, MismatchKind};
use crate::diagnose::{Position, is_conflict};
use crate::model::{Entry, RankSet, Sizes, Stack, State, format_ranks};

/// Frames shown per collective: the user frames come first in FR's innermost-first order and a
/// training step rarely needs more; deep library stacks would only bloat the blob.
const MAX_FRAMES: usize = 24;
/// Conflicting mismatches besides the earliest that get a window of their own.
const EXTRA_WINDOWS: usize = 3;

#[derive(Serialize)]
pub(super) struct Timeline {
    /// Op names; a detail's `op` indexes here and the colour follows the index.
    ops: Vec<String>,
    /// Whether the backend tracks started/completed (NCCL); Gloo leaves every entry `scheduled`,
    /// and drawing all of them as "not started" would mislead.
    states: bool,
    details: Vec<Detail>,
    pgs: Vec<PgTimeline>,
    /// Labels of the first [`ELIDED_LABELS`] process groups left out to keep the report small.
    pgs_elided: Vec<String>,
    /// How many were left out (12,500 labels would be most of a 100,000-rank report).
    pgs_elided_count: usize,
    /// The earliest `time_created_ns` of any entry: lanes' times count from here.
    base_ns: i64,
}

impl Timeline {
    /// Lanes drawn, over every process group.
    pub(super) fn lanes(&self) -> usize {
        self.pgs.iter().map(|p| p.lanes.len()).sum()
    }
}

#[derive(Serialize)]
struct Detail {
    op: usize,
    /// Entries at this seq (coalesced ops share one).
    n: usize,
    name: String,
    input: Sizes,
    output: Sizes,
    dtypes: std::sync::Arc<[std::sync::Arc<str>]>,
    out_dtypes: std::sync::Arc<[std::sync::Arc<str>]>,
    state: &'static str,
    /// `[function, file, line, is_library]`, innermost first.
    frames: Vec<(std::sync::Arc<str>, std::sync::Arc<str>, u32, bool)>,
}

#[derive(Serialize)]
struct PgTimeline {
    name: String,
    label: String,
    members: String,
    window_start: u64,
    /// One entry per column: a seq id, or `-n` for a gap standing for `n` elided seqs.
    cols: Vec<i64>,
    lanes: Vec<Lane>,
    marks: Vec<Mark>,
    /// Lanes not drawn (too many stream classes), as a sentence; empty when none.
    lanes_elided: String,
    /// Shown expanded: it holds the mismatch, the stuck collective or culprits.
    open: bool,
}

#[derive(Serialize)]
struct Lane {
    label: String,
    ranks: String,
    /// Every rank of the lane departed from its peers.
    culprit: bool,
    stuck: bool,
    /// Members without a readable dump: an empty lane that still shows who is absent.
    missing: bool,
    /// Flat `(column, detail)` pairs.
    cells: Vec<u32>,
    /// Per cell, flat `(created, duration)` in milliseconds since `Timeline::base_ns`; the
    /// duration is -1 when the dump recorded neither start nor completion (Gloo), and the
    /// creation -1 when it has no timestamp. The time axis draws from these.
    times: Vec<f64>,
}

#[derive(Serialize)]
struct Mark {
    col: usize,
    /// Adjacent columns the mark covers (a run of mismatches of one kind).
    span: usize,
    /// `earliest`, `stuck` or `mismatch`.
    kind: &'static str,
    label: String,
}

/// What a collective looked like on one rank; equal keys share a [`Detail`].
#[derive(Hash, PartialEq, Eq)]
struct DetailKey {
    name: std::sync::Arc<str>,
    input: Sizes,
    output: Sizes,
    dtypes: std::sync::Arc<[std::sync::Arc<str>]>,
    out_dtypes: std::sync::Arc<[std::sync::Arc<str>]>,
    state: State,
    stack: Option<Stack>,
    n: usize,
}

struct Builder<'a> {
    a: &'a Analysis,
    options: &'a HtmlOptions,
    base_ns: i64,
    ops: FxHashMap<std::sync::Arc<str>, usize>,
    details: Vec<Detail>,
    detail_index: FxHashMap<DetailKey, u32>,
    /// Per global rank: culprit, and the process group it is stuck in.
    culprit: Vec<bool>,
    stuck_in: Vec<Option<usize>>,
}

pub(super) fn timeline(a: &Analysis, options: &HtmlOptions) -> Timeline {
    let world = a.trace.world_size.max(a.trace.ranks.last().map_or(0, |r| r.rank + 1)) as usize;
    let mut culprit = vec![false; world];
    for &r in a.diagnosis.culprit_ranks.as_slice() {
        if let Some(c) = culprit.get_mut(r as usize) {
            *c = true;
        }
    }
    let mut stuck_in = vec![None; world];
    for g in a.diagnosis.groups.iter().filter(|g| g.stuck) {
        if let Position::At(at) = &g.position {
            for &r in g.ranks.as_slice() {
                if let Some(s) = stuck_in.get_mut(r as usize) {
                    *s = Some(at.pg);
                }
            }
        }
    }
    let base_ns = a
        .trace
        .ranks
        .iter()
        .flat_map(|r| &r.entries)
        .map(Entry::created_ns)
        .filter(|&t| t > 0)
        .min()
        .unwrap_or(0);
    let mut b = Builder {
        a,
        options,
        base_ns,
        ops: FxHashMap::default(),
        details: Vec::new(),
        detail_index: FxHashMap::default(),
        culprit,
        stuck_in,
    };
    let order = pg_order(&b);
    let (drawn, elided) = order.split_at(order.len().min(options.process_groups.max(1)));
    let pgs =
        drawn.iter().map(|&(i, interesting)| b.pg(&a.alignment.groups[i], interesting)).collect();
    let pgs_elided = elided
        .iter()
        .take(ELIDED_LABELS)
        .map(|&(i, _)| a.trace.process_groups[a.alignment.groups[i].pg].label())
        .collect();
    let mut ops: Vec<(std::sync::Arc<str>, usize)> = b.ops.into_iter().collect();
    ops.sort_by_key(|(_, i)| *i);
    let states = a.trace.ranks.iter().flat_map(|r| &r.entries).any(|e| e.state != State::Scheduled);
    Timeline {
        ops: ops.into_iter().map(|(n, _)| n.to_string()).collect(),
        states,
        details: b.details,
        pgs,
        pgs_elided,
        pgs_elided_count: elided.len(),
        base_ns,
    }
}

/// Labels of process groups left out that the report names; the rest are counted.
const ELIDED_LABELS: usize = 40;

/// Alignment groups, the interesting ones first (earliest mismatch, stuck, conflicts,
/// culprit members), each with whether it is interesting. At 4,096 ranks a job has hundreds
/// of tensor-parallel groups; the ones that explain the hang must not be cut off.
fn pg_order(b: &Builder<'_>) -> Vec<(usize, bool)> {
    let d = &b.a.diagnosis;
    let rank_of = |i: usize| -> u8 {
        let g = &b.a.alignment.groups[i];
        if d.earliest.as_ref().is_some_and(|e| e.mismatch.pg == g.pg) {
            0
        } else if d.stuck_at.is_some_and(|(pg, _)| pg == g.pg) || d.process_group == Some(g.pg) {
            1
        } else if g.mismatches.iter().any(|m| is_conflict(m.kind)) {
            2
        } else if g.members.iter().any(|&r| b.culprit.get(r as usize).copied().unwrap_or(false)) {
            3
        } else if g.mismatches.is_empty() {
            5
        } else {
            4
        }
    };
    let mut order: Vec<(usize, u8)> =
        (0..b.a.alignment.groups.len()).map(|i| (i, rank_of(i))).collect();
    order.sort_by_key(|&(i, r)| (r, i));
    let few = order.len() <= 4;
    order.into_iter().map(|(i, r)| (i, few || r < 5)).collect()
}

impl Builder<'_> {
    fn pg(&mut self, g: &GroupAlignment, open: bool) -> PgTimeline {
        let pg = &self.a.trace.process_groups[g.pg];
        let (cols, seq_col) = self.columns(g);
        let (specs, lanes_elided) = self.lane_specs(g);
        let lanes = specs.into_iter().map(|s| self.lane(g, s, &cols)).collect();
        PgTimeline {
            name: pg.name.to_string(),
            label: pg.label(),
            members: short_ranks(&g.members),
            window_start: g.window_start,
            marks: self.marks(g, &seq_col),
            cols,
            lanes,
            lanes_elided,
            open,
        }
    }

    /// Seqs worth a column, with gaps for the runs in between; and seq -> column.
    fn columns(&self, g: &GroupAlignment) -> (Vec<i64>, FxHashMap<u64, usize>) {
        let seqs = &g.seqs;
        let n = seqs.len();
        let mut keep = vec![false; n];
        for k in keep.iter_mut().skip(n.saturating_sub(self.options.tail_seqs)) {
            *k = true;
        }
        for seq in self.focus_seqs(g) {
            let at = seqs.partition_point(|&s| s < seq);
            let from = at.saturating_sub(self.options.context_seqs);
            let to = (at + self.options.context_seqs + 1).min(n);
            for k in &mut keep[from..to] {
                *k = true;
            }
        }
        let mut cols = Vec::new();
        let mut seq_col = FxHashMap::default();
        let mut skipped = 0i64;
        for (i, &seq) in seqs.iter().enumerate() {
            if !keep[i] {
                skipped += 1;
                continue;
            }
            if skipped > 0 {
                cols.push(-skipped);
                skipped = 0;
            }
            seq_col.insert(seq, cols.len());
            cols.push(seq as i64);
        }
        if skipped > 0 {
            cols.push(-skipped);
        }
        (cols, seq_col)
    }

    /// Seqs of this group around which context is kept.
    fn focus_seqs(&self, g: &GroupAlignment) -> Vec<u64> {
        let d = &self.a.diagnosis;
        let mut out = Vec::new();
        if let Some(e) = d.earliest.as_ref().filter(|e| e.mismatch.pg == g.pg) {
            out.push(e.mismatch.seq);
        }
        if let Some((_, seq)) = d.stuck_at.filter(|(pg, _)| *pg == g.pg) {
            out.push(seq);
        }
        if let (Some(pg), Some(seq)) = (d.process_group, d.collective_seq_id)
            && pg == g.pg
        {
            out.push(seq);
        }
        out.extend(
            g.mismatches.iter().filter(|m| is_conflict(m.kind)).take(EXTRA_WINDOWS).map(|m| m.seq),
        );
        out
    }

    /// Which lanes to draw: one per member when few, else one per stream class.
    fn lane_specs(&self, g: &GroupAlignment) -> (Vec<LaneSpec>, String) {
        if g.members.len() <= self.options.rank_lanes {
            let specs = g
                .members
                .iter()
                .map(|&r| {
                    let source = g.stream(r).map(|_| r);
                    let label = if source.is_some() {
                        format!("rank {r}")
                    } else {
                        format!("rank {r} (no dump)")
                    };
                    LaneSpec { label, ranks: RankSet::new(vec![r]), source }
                })
                .collect();
            return (specs, String::new());
        }
        let culprit = |c: &RankSet| {
            c.as_slice().iter().any(|&r| self.culprit.get(r as usize).copied().unwrap_or(false))
        };
        // Culprit classes first so a cap never hides them; then the alignment's order (largest first).
        let mut classes: Vec<&crate::align::StreamClass> = g.classes.iter().collect();
        classes.sort_by_key(|c| !culprit(&c.ranks));
        let budget = self.options.class_lanes.max(1);
        let mut specs: Vec<LaneSpec> = classes
            .iter()
            .take(budget)
            .map(|c| {
                let n = c.ranks.len();
                let short = short_ranks(c.ranks.as_slice());
                let label = match n {
                    1 => format!("rank {}", c.ranks),
                    _ if short.ends_with(&format!(" of {n}")) => format!("ranks {short}"),
                    _ => format!("ranks {short} ({n})"),
                };
                LaneSpec {
                    label,
                    ranks: c.ranks.clone(),
                    source: Some(g.streams[c.representative].rank),
                }
            })
            .collect();
        if !g.absent.is_empty() {
            let ranks = RankSet::new(g.absent.clone());
            specs.push(LaneSpec {
                label: format!("ranks {} (no dump)", short_ranks(ranks.as_slice())),
                ranks,
                source: None,
            });
        }
        let rest = &classes[classes.len().min(budget)..];
        let elided = if rest.is_empty() {
            String::new()
        } else {
            let ranks: usize = rest.iter().map(|c| c.ranks.len()).sum();
            format!("{} more stream classes ({ranks} ranks) not drawn", rest.len())
        };
        specs.sort_by(|x, y| x.ranks.as_slice().first().cmp(&y.ranks.as_slice().first()));
        (specs, elided)
    }

    fn lane(&mut self, g: &GroupAlignment, spec: LaneSpec, cols: &[i64]) -> Lane {
        let (mut cells, mut times) = (Vec::new(), Vec::new());
        if let Some(rank) = spec.source {
            for (col, &seq) in cols.iter().enumerate() {
                if seq < 0 {
                    continue;
                }
                let run = g.entries_at(&self.a.trace, rank, seq as u64);
                if !run.is_empty() {
                    cells.push(col as u32);
                    cells.push(self.detail(&run));
                    let e = run[0];
                    // Microsecond precision keeps the numbers short in the blob.
                    let ms = |ns: i64| ((ns - self.base_ns) / 1000) as f64 / 1e3;
                    let created = if e.created_ns() > 0 { ms(e.created_ns()) } else { -1.0 };
                    let end = e.completed_ns().or(e.started_ns()).filter(|&t| t >= e.created_ns());
                    let duration = end.map_or(-1.0, |t| ((t - e.created_ns()) / 1000) as f64 / 1e3);
                    times.push(created);
                    times.push(duration);
                }
            }
        }
        let ranks = spec.ranks.as_slice();
        Lane {
            // A class lane is red only when all of it departed: a 512-rank data-parallel lane
            // that merely contains the culprit would point at the wrong ranks.
            culprit: ranks.iter().all(|&r| self.culprit.get(r as usize).copied().unwrap_or(false)),
            stuck: ranks
                .iter()
                .any(|&r| self.stuck_in.get(r as usize).copied().flatten() == Some(g.pg)),
            missing: spec.source.is_none(),
            ranks: format_ranks(ranks),
            label: spec.label,
            cells,
            times,
        }
    }

    fn detail(&mut self, run: &[&Entry]) -> u32 {
        let first = run[0];
        let key = DetailKey {
            name: first.op().profiling_name.clone(),
            input: first.input_sizes().clone(),
            output: first.output_sizes().clone(),
            dtypes: first.input_dtypes().clone(),
            out_dtypes: first.output_dtypes().clone(),
            state: run[run.len() - 1].state,
            stack: first.stack().cloned(),
            n: run.len(),
        };
        if let Some(&i) = self.detail_index.get(&key) {
            return i;
        }
        let next = self.ops.len();
        let op = *self.ops.entry(first.op().name.clone()).or_insert(next);
        let frames = first
            .stack()
            .map_or(&[][..], |s| &s[..])
            .iter()
            .take(MAX_FRAMES)
            .map(|f| (f.function.clone(), f.file.clone(), f.line, f.is_library()))
            .collect();
        self.details.push(Detail {
            op,
            n: key.n,
            name: first.op().name.to_string(),
            input: key.input.clone(),
            output: key.output.clone(),
            dtypes: key.dtypes.clone(),
            out_dtypes: key.out_dtypes.clone(),
            state: key.state.as_str(),
            frames,
        });
        let i = (self.details.len() - 1) as u32;
        self.detail_index.insert(key, i);
        i
    }

    fn marks(&self, g: &GroupAlignment, seq_col: &FxHashMap<u64, usize>) -> Vec<Mark> {
        let d = &self.a.diagnosis;
        let mut marks = Vec::new();
        let earliest =
            d.earliest.as_ref().filter(|e| e.mismatch.pg == g.pg).map(|e| e.mismatch.seq);
        let stuck = d.stuck_at.filter(|(pg, _)| *pg == g.pg).map(|(_, s)| s);
        if let Some(seq) = earliest
            && let Some(&col) = seq_col.get(&seq)
        {
            let label =
                if stuck == Some(seq) { "earliest mismatch · stuck" } else { "earliest mismatch" };
            marks.push(Mark {
                col,
                span: 1,
                kind: "earliest",
                label: format!("{label} (seq {seq})"),
            });
        }
        if let Some(seq) = stuck.filter(|&s| Some(s) != earliest)
            && let Some(&col) = seq_col.get(&seq)
        {
            marks.push(Mark { col, span: 1, kind: "stuck", label: format!("stuck (seq {seq})") });
        }
        // Other mismatches: a run of adjacent columns with the same kind is one mark (a rank
        // without a dump misses every seq: one label for the run, not one per seq).
        let mut run: Option<(usize, usize, MismatchKind, u64, u64)> = None;
        let flush = |run: Option<(usize, usize, MismatchKind, u64, u64)>, marks: &mut Vec<Mark>| {
            let Some((col, span, kind, first, last)) = run else { return };
            let what = match kind {
                MismatchKind::Missing => "not issued by all".to_owned(),
                MismatchKind::State => "completed on some".to_owned(),
                kind => format!("{} mismatch", kind.as_str()),
            };
            let seqs = if first == last {
                format!("seq {first}")
            } else {
                format!("seq {first}–{last}")
            };
            marks.push(Mark { col, span, kind: "mismatch", label: format!("{what} ({seqs})") });
        };
        for m in &g.mismatches {
            if Some(m.seq) == earliest || Some(m.seq) == stuck {
                continue;
            }
            let Some(&col) = seq_col.get(&m.seq) else { continue };
            match &mut run {
                Some((start, span, kind, _, last)) if *kind == m.kind && *start + *span == col => {
                    *span += 1;
                    *last = m.seq;
                }
                _ => {
                    flush(run.take(), &mut marks);
                    run = Some((col, 1, m.kind, m.seq, m.seq));
                }
            }
        }
        flush(run, &mut marks);
        marks
    }
}

struct LaneSpec {
    label: String,
    ranks: RankSet,
    /// The rank whose entries fill the lane; `None` for ranks without a dump.
    source: Option<u32>,
}

/// Rank sets short enough for a lane label: compact ranges when they are short, a stride
/// (a data-parallel group: every 8th rank) as `3..4091 step 8`, else the first ranges and a count.
fn short_ranks(ranks: &[u32]) -> String {
    const MAX: usize = 40;
    let text = format_ranks(ranks);
    if text.len() <= MAX || ranks.len() < 3 {
        return text;
    }
    let step = ranks[1] - ranks[0];
    if step > 1 && ranks.windows(2).all(|w| w[1] - w[0] == step) {
        return format!("{}..{} step {step}", ranks[0], ranks[ranks.len() - 1]);
    }
    let cut = text[..MAX].rfind(',').unwrap_or(MAX);
    format!("{},… of {}", &text[..cut], ranks.len())
}

#[cfg(test)]
mod tests {
    use super::short_ranks;

    #[test]
    fn long_rank_sets_stay_short() {
        assert_eq!(short_ranks(&[0, 1, 2, 5]), "0-2,5");
        let dp: Vec<u32> = (0..512).map(|i| 3 + 8 * i).collect();
        assert_eq!(short_ranks(&dp), "3..4091 step 8");
        let odd: Vec<u32> = (0..300).filter(|r| r % 3 != 0 && r % 7 != 0).collect();
        let s = short_ranks(&odd);
        assert!(
            s.len() < 60 && s.starts_with("1-2,4-5,") && s.ends_with(&format!("of {}", odd.len())),
            "{s}"
        );
    }
}
