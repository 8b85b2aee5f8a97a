//! Straggler detection when nothing hangs: per collective that every member issued, how late
//! each rank enqueued it relative to the earliest rank. One rank that is consistently last,
//! by a margin, is a straggler. Clocks of different hosts may be skewed, so the test is on
//! ranks being last, not on absolute lags alone.

use crate::align::Alignment;
use crate::model::Trace;

/// Fewer comparable collectives than this decide nothing.
const MIN_COLLECTIVES: usize = 5;
/// Share of collectives in which the same rank must be last.
const MIN_SHARE_LAST: f64 = 0.7;
/// The straggler's median lag must be at least this (and well above the others').
const MIN_LAG_NS: i64 = 2_000_000;

#[derive(Debug, Clone, serde::Serialize)]
pub struct Straggler {
    pub rank: u32,
    /// Index into `Trace::process_groups` of the group measured.
    #[serde(skip)]
    pub pg: usize,
    pub collectives: usize,
    pub times_last: usize,
    pub median_lag_ms: f64,
    pub others_median_lag_ms: f64,
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
    let (worst, &times_last) = last_count.iter().enumerate().max_by_key(|(_, c)| **c)?;
    let median_lag = median(&mut lags[worst].clone());
    let mut others: Vec<i64> = lags.iter().enumerate().filter(|(i, _)| *i != worst).flat_map(|(_, l)| l.clone()).collect();
    let others_median = median(&mut others);
    let share = times_last as f64 / compared as f64;
    (share >= MIN_SHARE_LAST && median_lag >= MIN_LAG_NS && median_lag >= 3 * others_median.max(1)).then(|| Straggler {
        rank: ranks[worst],
        pg: group.pg,
        collectives: compared,
        times_last,
        median_lag_ms: median_lag as f64 / 1e6,
        others_median_lag_ms: others_median as f64 / 1e6,
    })
}

fn median(values: &mut [i64]) -> i64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    values[values.len() / 2]
}
