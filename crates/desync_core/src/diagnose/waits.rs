//! Who waits for whom. A rank sitting in collective `seq` of a group waits for every member
//! that has not issued `seq` there (or has no dump). Following those edges finds the ranks at
//! the end of the chain (a stall or a crash) or a cycle across groups (a deadlock).
//!
//! A cycle is a deadlock only when the sides run the same collectives in different orders.
//! A side whose collective none of the ranks it waits for ever issued (on a group they never
//! used, or never with that op and shape) is no side of an order: it went somewhere its peers
//! never go, and the cycle is that side's divergence.

use crate::align::Alignment;
use crate::diagnose::position::{At, Position};
use crate::model::{RankSet, Trace};

/// One behaviour group's wait: its ranks sit in `pg`/`seq` and need `waiting_for`.
#[derive(Debug, Clone)]
pub struct Wait {
    pub group: usize,
    pub pg: usize,
    pub seq: u64,
    pub waiting_for: RankSet,
}

/// Members of the position's group that have not issued its seq, or have no dump.
pub fn waiting_for(trace: &Trace, alignment: &Alignment, at: &At) -> RankSet {
    let group = &alignment.groups[at.pg];
    group
        .members
        .iter()
        .copied()
        .filter(|&r| match group.stream(r) {
            Some(s) => s.progress.last_enqueued.is_none_or(|last| last < at.seq),
            // `absent` is sorted (members are): a linear scan here was quadratic in the world.
            None => trace.rank(r).is_some() || group.absent.binary_search(&r).is_ok(),
        })
        .collect()
}

/// A rank is stuck at its position when a member never issued that collective, or when the
/// backend tracks completion (NCCL states) and it did not complete. Gloo marks completion in
/// `pg_status` from a separate thread, so there a collective every member issued may still read
/// "in flight" at dump time without anything being wrong.
pub fn is_stuck(position: &Position, waiting_for: &RankSet, tracks_states: bool) -> bool {
    match position {
        Position::At(at) => {
            !waiting_for.is_empty() || (tracks_states && at.completed != Some(true))
        }
        _ => false,
    }
}

/// Whether the collective at `at` has no precedent among the ranks it waits for: each of them
/// holds its whole history of that group (nothing evicted, every seq it issued there still
/// held), and none ever issued a collective there with the same op, sizes and dtypes. The
/// call path is left out on purpose: an order inversion often moves a collective to another
/// line (`if odd: all_reduce(metrics); sync_grads()` against `sync_grads(); all_reduce(metrics)`),
/// and it is still the collective the peers run every step. `false` when it cannot be shown:
/// a rank waited for has no dump, or its older entries of the group were dropped.
pub fn without_precedent(alignment: &Alignment, at: &At, waiting_for: &RankSet) -> bool {
    let group = &alignment.groups[at.pg];
    // A member's earliest entries of the group are gone (ring buffer): the collective may
    // be among them.
    if waiting_for.is_empty() || group.window_start > 1 {
        return false;
    }
    if waiting_for.as_slice().iter().any(|&r| group.stream(r).is_none()) {
        return false;
    }
    group
        .classes
        .iter()
        .filter(|c| c.ranks.as_slice().iter().any(|&r| waiting_for.contains(r)))
        .all(|c| {
            let held = c.tokens_between(1, u64::MAX);
            let issued = c.progress.last_enqueued.unwrap_or(0);
            held.len() as u64 == issued && held.iter().all(|t| t.sig != at.token.sig)
        })
}

/// A cycle among behaviour groups, as the list of groups in order, when one exists.
pub fn find_cycle(
    waits: &[Wait],
    group_of: &dyn Fn(u32) -> Option<usize>,
    groups: usize,
) -> Option<Vec<usize>> {
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); groups];
    for w in waits {
        for &r in w.waiting_for.as_slice() {
            if let Some(g) = group_of(r)
                && g != w.group
                && !edges[w.group].contains(&g)
            {
                edges[w.group].push(g);
            }
        }
    }
    // Depth-first search with colours; the graph has one node per behaviour group (few).
    let mut colour = vec![0u8; groups];
    let mut path = Vec::new();
    for start in 0..groups {
        if colour[start] == 0
            && let Some(cycle) = visit(start, &edges, &mut colour, &mut path)
        {
            return Some(cycle);
        }
    }
    None
}

fn visit(
    node: usize,
    edges: &[Vec<usize>],
    colour: &mut [u8],
    path: &mut Vec<usize>,
) -> Option<Vec<usize>> {
    colour[node] = 1;
    path.push(node);
    for &next in &edges[node] {
        if colour[next] == 1 {
            let start = path.iter().position(|&n| n == next).unwrap_or(0);
            return Some(path[start..].to_vec());
        }
        if colour[next] == 0
            && let Some(cycle) = visit(next, edges, colour, path)
        {
            return Some(cycle);
        }
    }
    path.pop();
    colour[node] = 2;
    None
}
