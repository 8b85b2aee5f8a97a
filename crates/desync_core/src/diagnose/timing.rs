//! Straggler detection when nothing hangs. For each collective every member issued, the
//! rank that enqueued it last held everyone up by its lead over the second-to-last rank.
//! A straggler is last often and accounts for most of that waiting. A slow data step delays
//! only the first collective of each step (the ones after it start together), so "often" is
//! a third of collectives; occasional slowness of other ranks (logging on rank 0) stays a
//! minority of the waiting. Clock skew between hosts shifts every timestamp of a rank by the
//! same amount, which a lead over the next rank absorbs only when it is small: large skews
//! can mimic a straggler, and the report says how much time is at stake.

use crate::align::Alignment;
use crate::model::Trace;

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
            .map(|&r| group.first_at(trace, r, seq).map(|e| e.time_created_ns).filter(|&t| t > 0))
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
        })
}
