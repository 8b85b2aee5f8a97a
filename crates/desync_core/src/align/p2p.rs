//! Point-to-point matching: on each (src, dst) channel of a group, the n-th send from A to B
//! pairs with the n-th recv on B from A, counted from a point both ranks' records cover.
//!
//! torchfrtrace matches a lone send/recv by `collective_seq_id` against the whole group, which
//! p2p ops do not increment, so it reports missing ranks that are not missing. Pairing per
//! (src, dst) channel avoids that. Peers in profiling names are group-local ranks; the global
//! rank is the sorted member list at that index. Gloo records no p2p at all.
//!
//! **Ring buffers.** Each rank's buffer drops its oldest entries at its own rate, so counting
//! both sides from their first held op pairs a send with a later recv once one side dropped
//! more (healthy generated jobs read full of unmatched sends that way). A p2p op carries the
//! group's current `collective_seq_id`: it was recorded after that collective and before the
//! next. A rank's records of the group are complete from collective `s` on when it holds that
//! collective's entry and every record after it (record ids count every entry of the process,
//! +1 each, so a dump whose ids run without a gap holds everything since its oldest), or from
//! the start when its oldest record is the process's first (id 0). Both sides are counted
//! from the later of their two complete points (the *anchor*); where either side's point is
//! unknown, nothing on the channel is judged. The pairing assumes a send and its recv fall
//! on the same side of the anchor collective, as in code that posts a step's p2p between the
//! same collectives on both ranks.
//!
//! **Unmatched.** An op beyond the other side's count is unmatched only when the peer went
//! past the point where its half should be: it issued a later collective of the group than
//! the op's own seq. A peer still before that point may yet post it (unknown, never a
//! mismatch).

use rustc_hash::FxHashMap;

use super::by_group::{Held, Window};
use super::{GroupAlignment, RankStream};
use crate::model::{Entry, OpKind, P2pDirection, ProcessGroup, Trace};

#[derive(Debug, Clone, serde::Serialize)]
pub struct P2pMismatch {
    pub src: u32,
    pub dst: u32,
    /// 0-based position on the (src, dst) channel, counted from the first collective of the
    /// group both ranks' records cover (`anchor_seq`).
    pub index: usize,
    pub kind: P2pProblem,
    pub send_sizes: Option<Vec<Vec<i64>>>,
    pub recv_sizes: Option<Vec<Vec<i64>>>,
    /// The posted op's `collective_seq_id` (for an unmatched op; the send's for a size).
    #[serde(skip)]
    pub seq: u64,
    /// The newest collective of the group the peer issued (for an unmatched op).
    #[serde(skip)]
    pub peer_at: Option<u64>,
    /// For an unmatched op: it had not completed on the rank that posted it (that rank waits
    /// in it). Judged from its own state, or its batch's end marker for ops posted inside
    /// `batch_isend_irecv` (those never complete on their own: they have no CUDA events).
    #[serde(skip)]
    pub pending: bool,
}

impl P2pMismatch {
    /// The rank that posted the op without a counterpart, and the peer that went past.
    pub fn poster_and_peer(&self) -> (u32, u32) {
        match self.kind {
            P2pProblem::RecvUnmatched => (self.dst, self.src),
            _ => (self.src, self.dst),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum P2pProblem {
    /// Both sides posted, with different sizes.
    Size,
    /// A send whose receiver went past the point of the recv without posting it.
    SendUnmatched,
    /// A recv whose sender went past the point of the send without posting it.
    RecvUnmatched,
}

/// One side's ops on a channel: (index into its dump's entries, the entry).
type Ops<'t> = Vec<(u32, &'t Entry)>;

/// `held`: what each dump holds of the group (by rank); only members' p2p ops are paired.
/// `windows`: per dump, in `Trace::ranks` order.
pub(super) fn align_p2p<'t>(
    trace: &'t Trace,
    group: &GroupAlignment,
    pg: &ProcessGroup,
    held: &[Held],
    windows: &[Window],
) -> Vec<P2pMismatch> {
    let global = |local: Option<u32>| local.and_then(|l| pg.members.get(l as usize).copied());
    let mut channels: FxHashMap<(u32, u32), (Ops<'t>, Ops<'t>)> = FxHashMap::default();
    for h in held.iter().filter(|h| !h.p2p.is_empty() && group.stream(h.rank).is_some()) {
        let Some(dump) = trace.rank(h.rank) else { continue };
        for &i in &h.p2p {
            let e = &dump.entries[i as usize];
            let Some(p2p) = e.op().p2p else { continue };
            let (Some(src), Some(dst)) = (global(p2p.src), global(p2p.dst)) else { continue };
            let channel = channels.entry((src, dst)).or_default();
            match p2p.direction {
                P2pDirection::Send => channel.0.push((i, e)),
                P2pDirection::Recv => channel.1.push((i, e)),
            }
        }
    }
    let window =
        |rank: u32| trace.ranks.binary_search_by_key(&rank, |d| d.rank).ok().map(|i| windows[i]);
    let mut out = Vec::new();
    let mut keys: Vec<_> = channels.keys().copied().collect();
    keys.sort_unstable();
    for (src, dst) in keys {
        let (Some(src_stream), Some(dst_stream)) = (group.stream(src), group.stream(dst)) else {
            continue;
        };
        let (Some(src_window), Some(dst_window)) = (window(src), window(dst)) else { continue };
        let (Some(from_src), Some(from_dst)) = (
            complete_from(trace, src_stream, src_window),
            complete_from(trace, dst_stream, dst_window),
        ) else {
            continue;
        };
        let anchor = from_src.max(from_dst);
        let (sends, recvs) = &channels[&(src, dst)];
        let after = |ops: &Ops<'t>| -> Ops<'t> {
            ops.iter().filter(|(_, e)| e.collective_seq_id >= anchor).copied().collect()
        };
        let (sends, recvs) = (after(sends), after(recvs));
        for index in 0..sends.len().max(recvs.len()) {
            let send = sends.get(index).map(|&(_, e)| e);
            let recv = recvs.get(index).map(|&(_, e)| e);
            let (kind, posted, poster, peer_stream) = match (send, recv) {
                (Some(s), Some(r)) if s.input_sizes() != r.output_sizes() => {
                    (P2pProblem::Size, s, src, None)
                }
                (Some(s), None) => (P2pProblem::SendUnmatched, s, src, Some(dst_stream)),
                (None, Some(r)) => (P2pProblem::RecvUnmatched, r, dst, Some(src_stream)),
                _ => continue,
            };
            let peer_at = peer_stream.and_then(|s| s.progress.last_enqueued);
            // Unmatched only where the peer went past the op's point; before it, unknown.
            if peer_stream.is_some() && peer_at.is_none_or(|at| at <= posted.collective_seq_id) {
                continue;
            }
            let pending = peer_stream.is_some() && {
                let (ops, i) = match kind {
                    P2pProblem::RecvUnmatched => (held_p2p(held, dst), recvs[index].0),
                    _ => (held_p2p(held, src), sends[index].0),
                };
                let tracks = window(poster).is_some_and(|w| w.tracks_states);
                tracks && !finished(trace, poster, ops, i)
            };
            out.push(P2pMismatch {
                src,
                dst,
                index,
                kind,
                send_sizes: send.map(|s| s.input_sizes().to_vec()),
                recv_sizes: recv.map(|r| r.output_sizes().to_vec()),
                seq: posted.collective_seq_id,
                peer_at,
                pending,
            });
        }
    }
    out
}

/// The first collective seq of the group from which `stream`'s rank holds every record
/// (0: from the group's start); `None` when that cannot be shown.
fn complete_from(trace: &Trace, stream: &RankStream, window: Window) -> Option<u64> {
    let first_record = window.first_record?;
    if first_record == 0 {
        return Some(0);
    }
    // Nothing evicted after the oldest record: everything after the group's oldest held
    // collective (and the p2p ops carrying its seq, recorded after it) is held.
    let dump = trace.rank(stream.rank)?;
    stream.entries.first().map(|&i| dump.entries[i as usize].collective_seq_id)
}

fn held_p2p(held: &[Held], rank: u32) -> &[u32] {
    held.binary_search_by_key(&rank, |h| h.rank).map_or(&[], |j| held[j].p2p.as_slice())
}

/// Whether the p2p op at `entries[i]` of `rank` finished: its own state, or, inside a batch,
/// its batch's end marker (the next `coalesced` p2p entry with the same `p2p_seq_id`).
fn finished(trace: &Trace, rank: u32, ops: &[u32], i: u32) -> bool {
    let Some(dump) = trace.rank(rank) else { return false };
    let op = &dump.entries[i as usize];
    if op.is_completed() {
        return true;
    }
    let start = ops.partition_point(|&j| j <= i);
    let marker = ops[start..]
        .iter()
        .map(|&j| &dump.entries[j as usize])
        .take_while(|e| e.p2p_seq_id == op.p2p_seq_id)
        .find(|e| e.op().kind == OpKind::Coalesced);
    marker.is_some_and(Entry::is_completed)
}
