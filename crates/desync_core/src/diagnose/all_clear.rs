//! What an all-clear must rest on. When no rank waits for another and nothing conflicts, the
//! set reads healthy only if the records leave no gap a hang could hide in. Each check below
//! names such a gap; the first one found turns the verdict into `inconclusive`, with the
//! records it rests on:
//!
//! - **A collective nobody finished, on members nobody recorded.** Gloo lists no members once
//!   sub-groups exist, and a rank that never used a group has no entry for it; without a record
//!   of the world size, a rank that left no file is invisible too. Agreement among the ranks
//!   that did record a collective proves nothing when none of them completed it: the member
//!   they wait for may be one nobody recorded. Completion on any one member proves the others
//!   arrived (an `all_reduce`, `all_gather` or barrier completes only when every member has
//!   issued it); for a rooted collective (broadcast, reduce, gather, scatter) only completion
//!   on every member that issued it does.
//!   Known gap: Gloo's `pg_status` also counts a collective that failed (a peer vanished, a
//!   timeout) as completed, so a dump taken after one member recorded the failure reads as
//!   if that member finished; nothing in the dump tells the two apart.
//! - **A collective every member issued and none completed**, members known: Gloo leaves no
//!   started/completed states to tell a transport hang from a dump taken while it ran.
//! - **Entries missing at the newest end**: a rank's `pg_status` says it enqueued a later
//!   collective than its newest entry of that group.
//! - **Records that contradict each other**: entries marked completed past the collective the
//!   rank's own `pg_status` says it completed last.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::align::{Alignment, RankStream};
use crate::diagnose::BehaviourGroup;
use crate::diagnose::position::Position;
use crate::model::{Membership, OpKind, RankDump, RankSet, State, Trace};

/// Which gap the records leave; the next steps depend on it (`next_steps.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoubtKind {
    /// Nobody finished a collective, and no record lists the group's members.
    UnrecordedMembers,
    /// Nobody finished a collective, and no record states the world size.
    UnstatedWorld,
    /// Every known member issued a collective and none finished it.
    NoneCompleted,
    /// The newest collectives of a rank were not recorded.
    StatusAhead,
    /// A rank's entries and status disagree.
    Contradiction,
}

/// Why the set is no all-clear: a headline, the ranks it points at (possibly none), where.
#[derive(Debug, Clone)]
pub struct Doubt {
    pub kind: DoubtKind,
    pub headline: String,
    pub ranks: RankSet,
    pub pg: Option<usize>,
    pub seq: Option<u64>,
    pub evidence: Vec<String>,
}

/// The first gap found, if any.
pub fn doubt(trace: &Trace, alignment: &Alignment, groups: &[BehaviourGroup]) -> Option<Doubt> {
    unfinished_collective(trace, alignment, groups)
        .or_else(|| status_ahead_of_entries(trace))
        .or_else(|| completion_contradicted(trace))
}

fn unfinished_collective(
    trace: &Trace,
    alignment: &Alignment,
    groups: &[BehaviourGroup],
) -> Option<Doubt> {
    for g in groups {
        let Position::At(at) = &g.position else { continue };
        if at.completed != Some(false) {
            continue;
        }
        let group = &alignment.groups[at.pg];
        let finished = |s: &RankStream| s.progress.last_completed.is_some_and(|c| c >= at.seq);
        let issued_it = |s: &&RankStream| s.progress.last_enqueued.is_some_and(|e| e >= at.seq);
        // A rooted collective finishes on the root once it has sent, and on a receiver once it
        // has heard from the root: only every member's completion shows that all arrived.
        let rooted = group.first_at(trace, g.ranks.as_slice()[0], at.seq).is_some_and(|e| {
            matches!(
                e.op().kind,
                OpKind::Broadcast | OpKind::Reduce | OpKind::Gather | OpKind::Scatter
            )
        });
        let pg = &trace.process_groups[at.pg];
        let arrived = if rooted {
            group.streams.iter().filter(issued_it).all(finished)
        } else {
            group.streams.iter().any(finished)
        };
        if arrived {
            continue;
        }
        let label = pg.label();
        let issued_set: RankSet = group.streams.iter().filter(issued_it).map(|s| s.rank).collect();
        let issued = issued_set.brief();
        let unfinished =
            if rooted { "not all of them completed it" } else { "none of them completed it" };
        let stuck_where =
            format!("rank(s) {issued} issued {} seq {} of {label} and {unfinished}", at.op, at.seq);
        let members_known = match pg.membership {
            Membership::PgConfig => true,
            Membership::InferredWorld => trace.world_stated,
            Membership::InferredFromEntries | Membership::AssumedWorld => false,
        };
        let (kind, headline, ranks) = if members_known {
            (
                DoubtKind::NoneCompleted,
                format!(
                    "every member of {label} issued {} seq {} and {unfinished}: a hang in the transport, or dumps taken while it ran; the dumps cannot tell which (Gloo records no start or completion per collective)",
                    at.op, at.seq
                ),
                RankSet::default(),
            )
        } else if matches!(
            pg.membership,
            Membership::InferredFromEntries | Membership::AssumedWorld
        ) {
            // Ranks with a dump that never used the group: the members it may be waiting for.
            let never_used: RankSet = trace
                .ranks
                .iter()
                .map(|d| d.rank)
                .filter(|&r| group.stream(r).is_none())
                .chain(trace.missing_ranks.iter().copied())
                .collect();
            let who = if never_used.is_empty() {
                String::new()
            } else {
                format!(
                    ", and rank(s) {} never used it: if any of them is a member, the others wait for it there",
                    never_used.brief()
                )
            };
            (
                DoubtKind::UnrecordedMembers,
                format!(
                    "{stuck_where}; no record lists the members of {label} (Gloo writes none once sub-groups exist){who}"
                ),
                never_used,
            )
        } else {
            let found = RankSet::new(trace.ranks.iter().map(|d| d.rank).collect());
            (
                DoubtKind::UnstatedWorld,
                format!(
                    "{stuck_where}; no record states the world size (only dumps of rank(s) {} were found, and pg_config lists no members): a rank that left no file would explain the wait. Pass --world-size N if you know it",
                    found.brief()
                ),
                RankSet::default(),
            )
        };
        return Some(Doubt {
            kind,
            headline,
            ranks,
            pg: Some(at.pg),
            seq: Some(at.seq),
            evidence: vec![if rooted {
                format!(
                    "{stuck_where} (pg_status): a rooted collective finishes on the root once it has sent and on a receiver once it has heard from the root, so only every member's completion would have shown that all arrived"
                )
            } else {
                format!(
                    "no member of {label} completed seq {} (pg_status of rank(s) {issued}): completion on any one member would have shown that every member arrived",
                    at.seq
                )
            }],
        });
    }
    None
}

/// Per process-local `pg_id` of one dump: its newest collective seq and its newest seq marked
/// completed, each with the group's name. One pass over the entries (a dump may hold
/// thousands of groups).
struct Newest<'t> {
    issued: FxHashMap<i64, (u64, &'t Arc<str>)>,
    completed: FxHashMap<i64, (u64, &'t Arc<str>)>,
}

impl<'t> Newest<'t> {
    fn of(dump: &'t RankDump) -> Self {
        let mut newest = Self { issued: FxHashMap::default(), completed: FxHashMap::default() };
        for e in dump.entries.iter().filter(|e| !e.is_p2p()) {
            let seen = (e.collective_seq_id, e.pg_name());
            let slot = newest.issued.entry(e.pg_id()).or_insert(seen);
            slot.0 = slot.0.max(seen.0);
            if e.state == State::Completed {
                let slot = newest.completed.entry(e.pg_id()).or_insert(seen);
                slot.0 = slot.0.max(seen.0);
            }
        }
        newest
    }
}

fn label_of(trace: &Trace, name: &str) -> (Option<usize>, String) {
    let pg = trace.process_groups.iter().position(|p| &*p.name == name);
    (pg, pg.map_or_else(|| format!("pg {name}"), |i| trace.process_groups[i].label()))
}

/// A rank whose `pg_status` claims a later collective of a group than its newest entry there.
fn status_ahead_of_entries(trace: &Trace) -> Option<Doubt> {
    for dump in &trace.ranks {
        let newest = Newest::of(dump);
        for status in &dump.pg_status {
            let Some(enqueued) = status.last_enqueued else { continue };
            let Some(&(newest, name)) = newest.issued.get(&status.pg_id) else { continue };
            if enqueued <= newest {
                continue;
            }
            let (pg, label) = label_of(trace, name);
            let headline = format!(
                "rank {}'s pg_status says it enqueued seq {enqueued} of {label}, but its newest entry there is seq {newest}: {} collective(s) were not recorded, so agreement up to seq {newest} is no all-clear",
                dump.rank,
                enqueued - newest
            );
            return Some(Doubt {
                kind: DoubtKind::StatusAhead,
                evidence: vec![headline.clone()],
                headline,
                ranks: RankSet::new(vec![dump.rank]),
                pg,
                seq: Some(newest + 1),
            });
        }
    }
    None
}

/// A rank whose entries say a collective completed past what its own `pg_status` says.
fn completion_contradicted(trace: &Trace) -> Option<Doubt> {
    for dump in &trace.ranks {
        let newest = Newest::of(dump);
        for status in &dump.pg_status {
            // A status with nothing completed yet (-1) still says "nothing completed".
            if status.last_enqueued.is_none() {
                continue;
            }
            let done = status.last_completed.unwrap_or(0);
            let Some(&(marked, name)) = newest.completed.get(&status.pg_id) else { continue };
            if marked <= done {
                continue;
            }
            let (pg, label) = label_of(trace, name);
            let headline = format!(
                "rank {}'s entries mark seq {marked} of {label} completed, but its pg_status says the last collective it completed there is seq {done}: the records contradict each other, so this is no all-clear",
                dump.rank
            );
            return Some(Doubt {
                kind: DoubtKind::Contradiction,
                evidence: vec![headline.clone()],
                headline,
                ranks: RankSet::new(vec![dump.rank]),
                pg,
                seq: Some(done + 1),
            });
        }
    }
    None
}
