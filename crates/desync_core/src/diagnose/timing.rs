//! Straggler detection when nothing hangs. For each collective every member issued, the
//! rank that enqueued it last held everyone up by its lead over the second-to-last rank.
//! A straggler is last often and accounts for most of that waiting. A slow data step delays
//! only the first collective of each step (the ones after it start together), so "often" is
//! a third of collectives; occasional slowness of other ranks (logging on rank 0) stays a
//! minority of the waiting. Clock skew between hosts shifts every timestamp of a rank by the
//! same amount, which a lead over the next rank absorbs only when it is small: large skews
//! can mimic a straggler, and the report says how much time is at stake.

use rustc_hash::FxHashMap;

use crate::align::{Alignment, GroupAlignment};
use crate::model::{Entry, Frame, Trace};

/// Fewer comparable collectives than this decide nothing.
const MIN_COLLECTIVES: usize = 5;
/// Share of collectives in which the straggler must be the last to enqueue.
const MIN_SHARE_LAST: f64 = 0.3;
/// Share of all the waiting (summed leads of the last rank) that the straggler caused.
const MIN_SHARE_OF_WAITING: f64 = 0.8;
/// Its median lead when last must be at least this. Scheduling noise reaches several ms when
/// ranks share cores (seen: 6.8 ms and 79% of the waiting in a healthy 4-rank job on 2 busy
/// cores); a straggler worth reporting costs more than that per step. The median, not the
/// mean: one late start (a rank importing torch 200 ms after the others, seen in a healthy
/// live job) must not make a straggler of a rank that is otherwise last by chance.
const MIN_MEDIAN_LEAD_NS: i64 = 20_000_000;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Straggler {
    pub rank: u32,
    /// Index into `Trace::process_groups` of the group measured.
    #[serde(skip)]
    pub pg: usize,
    pub collectives: usize,
    pub times_last: usize,
    /// Mean lead over the second-to-last rank in the collectives where it was last.
    pub mean_lead_ms: f64,
    /// Median of those leads (what decides: robust to one late start).
    pub median_lead_ms: f64,
    /// Share of all the waiting caused by being last that this rank caused.
    pub share_of_waiting: f64,
    /// Between which two consecutive collectives the straggler loses its time.
    pub slow_interval: Option<SlowInterval>,
}

/// Where a straggler loses time: the pair of consecutive collectives (by call site) between
/// which it takes longer than its peers. Peers leave a collective together (the last arrival
/// releases everyone), so the extra time between leaving one and entering the next is spent
/// in the code between the two call sites, on that rank only.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SlowInterval {
    /// The collective before the slow code (its op and call site).
    pub from: IntervalEnd,
    /// The collective the straggler reaches late.
    pub to: IntervalEnd,
    /// Times this pair of call sites followed each other in the window.
    pub occurrences: usize,
    /// Mean of the straggler's gap minus the median of its peers' gaps, over those times.
    pub mean_extra_ms: f64,
    /// Share of the straggler's extra time (over all consecutive pairs) spent here.
    pub share_of_extra: f64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IntervalEnd {
    pub op: String,
    pub collective_seq_id: u64,
    /// The innermost user frame, when the dumps carry frames.
    pub call_site: Option<SiteRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SiteRef {
    pub file: String,
    pub line: u32,
    pub function: String,
}

impl SiteRef {
    fn of(f: &Frame) -> Self {
        Self { file: f.file.to_string(), line: f.line, function: f.function.to_string() }
    }
}

pub fn straggler(trace: &Trace, alignment: &Alignment) -> Option<Straggler> {
    alignment.groups.iter().filter_map(|g| in_group(trace, g)).max_by_key(|s| s.times_last)
}

fn in_group(trace: &Trace, group: &crate::align::GroupAlignment) -> Option<Straggler> {
    if group.streams.len() < 2 || !group.absent.is_empty() {
        return None;
    }
    let ranks: Vec<u32> = group.streams.iter().map(|s| s.rank).collect();
    let mut leads_ns: Vec<Vec<i64>> = vec![Vec::new(); ranks.len()];
    let mut compared = 0;
    for &seq in &group.seqs {
        let times: Option<Vec<i64>> = ranks
            .iter()
            .map(|&r| group.first_at(trace, r, seq).map(Entry::created_ns).filter(|&t| t > 0))
            .collect();
        let Some(mut times) = times.map(|t| t.into_iter().enumerate().collect::<Vec<_>>()) else {
            continue;
        };
        times.sort_by_key(|(_, t)| *t);
        let (last, t_last) = times[times.len() - 1];
        let (_, t_second) = times[times.len() - 2];
        leads_ns[last].push(t_last - t_second);
        compared += 1;
    }
    if compared < MIN_COLLECTIVES {
        return None;
    }
    let summed: Vec<i64> = leads_ns.iter().map(|l| l.iter().sum()).collect();
    let total: i64 = summed.iter().sum();
    let (worst, &worst_lead) = summed.iter().enumerate().max_by_key(|(_, l)| **l)?;
    let leads = &mut leads_ns[worst];
    let times_last = leads.len();
    let share_last = times_last as f64 / compared as f64;
    let share_of_waiting = worst_lead as f64 / total.max(1) as f64;
    let mean_lead = worst_lead as f64 / times_last.max(1) as f64;
    leads.sort_unstable();
    let median_lead = leads.get(leads.len() / 2).copied().unwrap_or(0);
    (share_last >= MIN_SHARE_LAST
        && share_of_waiting >= MIN_SHARE_OF_WAITING
        && median_lead >= MIN_MEDIAN_LEAD_NS)
        .then(|| Straggler {
            rank: ranks[worst],
            pg: group.pg,
            collectives: compared,
            times_last,
            mean_lead_ms: mean_lead / 1e6,
            median_lead_ms: median_lead as f64 / 1e6,
            share_of_waiting,
            slow_interval: slow_interval(trace, group, ranks[worst]),
        })
}

/// The pair of consecutive call sites (ops when there are no frames) between which `rank`
/// spends the most time beyond its peers, summed over the window.
fn slow_interval(trace: &Trace, group: &GroupAlignment, rank: u32) -> Option<SlowInterval> {
    let peers: Vec<u32> = group.streams.iter().map(|s| s.rank).filter(|&r| r != rank).collect();
    let time = |r: u32, seq: u64| group.first_at(trace, r, seq).map(Entry::created_ns);
    let key = |e: &Entry| match e.call_site() {
        Some(f) => (f.file.to_string(), f.line, e.op().name.to_string()),
        None => (String::new(), 0, e.op().name.to_string()),
    };
    // (from key, to key) -> (summed extra ns, occurrences, latest (from, to) entries)
    let mut by_pair: FxHashMap<_, (i64, usize, (&Entry, &Entry))> = FxHashMap::default();
    let mut total_extra: i64 = 0;
    for pair in group.seqs.windows(2) {
        let (prev, seq) = (pair[0], pair[1]);
        let (Some(a), Some(b)) =
            (group.first_at(trace, rank, prev), group.first_at(trace, rank, seq))
        else {
            continue;
        };
        if a.created_ns() <= 0 || b.created_ns() < a.created_ns() {
            continue;
        }
        let mut peer_gaps: Vec<i64> = peers
            .iter()
            .filter_map(|&p| Some(time(p, seq)? - time(p, prev)?))
            .filter(|&g| g >= 0)
            .collect();
        if peer_gaps.is_empty() {
            continue;
        }
        peer_gaps.sort_unstable();
        let extra = (b.created_ns() - a.created_ns()) - peer_gaps[peer_gaps.len() / 2];
        if extra <= 0 {
            continue;
        }
        total_extra += extra;
        let slot = by_pair.entry((key(a), key(b))).or_insert((0, 0, (a, b)));
        slot.0 += extra;
        slot.1 += 1;
        slot.2 = (a, b);
    }
    let (_, &(extra, occurrences, (a, b))) = by_pair
        .iter()
        .max_by_key(|(k, (extra, _, _))| (*extra, std::cmp::Reverse((*k).clone())))?;
    let end = |e: &Entry| IntervalEnd {
        op: e.op().name.to_string(),
        collective_seq_id: e.collective_seq_id,
        call_site: e.call_site().map(SiteRef::of),
    };
    Some(SlowInterval {
        from: end(a),
        to: end(b),
        occurrences,
        mean_extra_ms: extra as f64 / occurrences as f64 / 1e6,
        share_of_extra: extra as f64 / total_extra.max(1) as f64,
    })
}
