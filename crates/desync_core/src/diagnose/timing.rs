//! Straggler detection when nothing hangs: per collective that every member issued, how late
//! each rank enqueued it relative to the earliest rank. A straggler's mean lag dwarfs every
//! other rank's, and it is the last rank often. A slow data step shows in the first
//! collective of each step only (the ones after it start together), so "often" is a third of
//! collectives, not most of them. Clock skew between hosts shifts every lag of a rank by the
//! same amount; the margin over the other ranks keeps small skews from deciding.

use crate::align::Alignment;
use crate::model::Trace;

/// Fewer comparable collectives than this decide nothing.
const MIN_COLLECTIVES: usize = 5;
/// Share of collectives in which the straggler must be the last to enqueue.
const MIN_SHARE_LAST: f64 = 0.3;
/// The straggler's mean lag must be at least this...
const MIN_MEAN_LAG_NS: f64 = 5e6;
/// ...and this many times the next slowest rank's.
const MIN_MARGIN: f64 = 4.0;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Straggler {
    pub rank: u32,
    /// Index into `Trace::process_groups` of the group measured.
    #[serde(skip)]
    pub pg: usize,
    pub collectives: usize,
    pub times_last: usize,
    pub mean_lag_ms: f64,
    /// The next slowest rank's mean lag.
    pub next_mean_lag_ms: f64,
}

pub fn straggler(trace: &Trace, alignment: &Alignment) -> Option<Straggler> {
    alignment.groups.iter().filter_map(|g| in_group(trace, g)).max_by_key(|s| s.times_last)
}

fn in_group(trace: &Trace, group: &crate::align::GroupAlignment) -> Option<Straggler> {
    if group.streams.len() < 2 || !group.absent.is_empty() {
        return None;
    }
    let ranks: Vec<u32> = group.streams.iter().map(|s| s.rank).collect();
    let mut lags: Vec<Vec<i64>> = vec![Vec::new(); ranks.len()];
    let mut last_count = vec![0usize; ranks.len()];
    let mut compared = 0;
    for seq in group.window_start..=group.max_seq() {
        let times: Option<Vec<i64>> = ranks
            .iter()
            .map(|&r| group.entries_at(trace, r, seq).first().map(|e| e.time_created_ns).filter(|&t| t > 0))
            .collect();
        let Some(times) = times else { continue };
        let earliest = *times.iter().min()?;
        let latest = times.iter().enumerate().max_by_key(|(_, t)| **t).map(|(i, _)| i)?;
        last_count[latest] += 1;
        for (i, t) in times.iter().enumerate() {
            lags[i].push(t - earliest);
        }
        compared += 1;
    }
    if compared < MIN_COLLECTIVES {
        return None;
    }
    let mean = |l: &[i64]| l.iter().sum::<i64>() as f64 / l.len().max(1) as f64;
    let mut by_lag: Vec<(usize, f64)> = lags.iter().map(|l| mean(l)).enumerate().collect();
    by_lag.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (worst, worst_lag) = by_lag[0];
    let next_lag = by_lag[1].1;
    let share = last_count[worst] as f64 / compared as f64;
    (share >= MIN_SHARE_LAST && worst_lag >= MIN_MEAN_LAG_NS && worst_lag >= MIN_MARGIN * next_lag.max(1e5)).then(|| Straggler {
        rank: ranks[worst],
        pg: group.pg,
        collectives: compared,
        times_last: last_count[worst],
        mean_lag_ms: worst_lag / 1e6,
        next_mean_lag_ms: next_lag / 1e6,
    })
}
