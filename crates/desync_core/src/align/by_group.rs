//! Each dump's entries sorted into their process groups in one pass over the dump, so that
//! aligning a group costs what its members hold of it, not every entry of every member: with
//! 10,000 groups of one collective each, a scan of every entry per group took 11 s of CPU for
//! 4 ranks (quadratic in the groups); one pass takes milliseconds.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::model::Trace;

/// What one rank's dump holds of one process group: indices into its `entries`, in file order.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub rank: u32,
    pub collectives: Vec<u32>,
    pub p2p: Vec<u32>,
}

/// A dump's `pg_status` items (their index) by `pg_id`.
pub(super) type StatusIndex = FxHashMap<i64, usize>;

/// What a dump's ring buffer still holds, for the p2p pairing (`p2p.rs`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Window {
    /// The oldest `record_id` held, when the dump holds every record from it to its newest
    /// (record ids count every entry of the process, +1 each); `None` when some are missing
    /// in between (a recorder asked for active entries only, entries dropped while loading),
    /// so nothing can be said about what the rank did *not* record.
    pub first_record: Option<u64>,
    /// Whether any entry carries start/completion states (NCCL; Gloo's stay "scheduled").
    pub tracks_states: bool,
}

impl Window {
    fn of(dump: &crate::model::RankDump, skipped: bool) -> Self {
        let (mut low, mut high) = (u64::MAX, 0u64);
        let mut tracks_states = false;
        for e in &dump.entries {
            low = low.min(e.record_id);
            high = high.max(e.record_id);
            tracks_states |= e.state != crate::model::State::Scheduled;
        }
        let whole = !dump.entries.is_empty()
            && !skipped
            && high.checked_sub(low).is_some_and(|span| span + 1 == dump.entries.len() as u64);
        Self { first_record: whole.then_some(low), tracks_states }
    }
}

/// What one pass over a dump finds: its groups' entries, its status index, its window.
type DumpParts = (Vec<(usize, Held)>, StatusIndex, Window);

/// Per process group (in `Trace::process_groups` order), the dumps holding any entry of it, by
/// rank; and per dump (in `Trace::ranks` order), its `pg_status` items by `pg_id` and its
/// window.
pub(super) struct ByGroup {
    pub groups: Vec<Vec<Held>>,
    pub status_of: Vec<StatusIndex>,
    pub windows: Vec<Window>,
}

impl ByGroup {
    pub fn new(trace: &Trace) -> Self {
        let index: FxHashMap<&str, usize> =
            trace.process_groups.iter().enumerate().map(|(i, pg)| (&*pg.name, i)).collect();
        let per_dump: Vec<DumpParts> = trace
            .ranks
            .par_iter()
            .map(|dump| {
                let skipped = trace.skipped_entries.iter().any(|&(r, n)| r == dump.rank && n > 0);
                let window = Window::of(dump, skipped);
                let mut held: FxHashMap<usize, Held> = FxHashMap::default();
                // Runs of entries of one group are the rule: ask the map once per run.
                let mut last: Option<(*const u8, usize)> = None;
                for (i, e) in dump.entries.iter().enumerate() {
                    let name = e.pg_name();
                    let g = match last {
                        Some((ptr, g)) if std::ptr::eq(ptr, name.as_ptr()) => g,
                        _ => {
                            let Some(&g) = index.get(&**name) else { continue };
                            last = Some((name.as_ptr(), g));
                            g
                        }
                    };
                    let h = held
                        .entry(g)
                        .or_insert_with(|| Held { rank: dump.rank, ..Held::default() });
                    if e.is_p2p() { h.p2p.push(i as u32) } else { h.collectives.push(i as u32) }
                }
                // Pushed one by one, the indices' capacity ends up to twice their length; they
                // live through the whole alignment (4 bytes an entry, every rank).
                for h in held.values_mut() {
                    h.collectives.shrink_to_fit();
                    h.p2p.shrink_to_fit();
                }
                let mut held: Vec<(usize, Held)> = held.into_iter().collect();
                held.sort_unstable_by_key(|(g, _)| *g);
                let status =
                    dump.pg_status.iter().enumerate().map(|(i, s)| (s.pg_id, i)).rev().collect();
                (held, status, window)
            })
            .collect();
        let mut groups: Vec<Vec<Held>> =
            (0..trace.process_groups.len()).map(|_| Vec::new()).collect();
        let mut status_of = Vec::with_capacity(per_dump.len());
        let mut windows = Vec::with_capacity(per_dump.len());
        // `trace.ranks` is sorted by rank, so each group's list comes out sorted by rank too.
        for (held, status, window) in per_dump {
            for (g, h) in held {
                groups[g].push(h);
            }
            status_of.push(status);
            windows.push(window);
        }
        Self { groups, status_of, windows }
    }
}
