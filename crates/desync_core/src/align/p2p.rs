//! Point-to-point matching: the n-th send from A to B pairs with the n-th recv on B from A.
//!
//! torchfrtrace matches a lone send/recv by `collective_seq_id` against the whole group, which
//! p2p ops do not increment, so it reports missing ranks that are not missing. Pairing per
//! (src, dst) channel avoids that. Peers in profiling names are group-local ranks; the global
//! rank is the sorted member list at that index. Gloo records no p2p at all.

use rustc_hash::FxHashMap;

use super::GroupAlignment;
use super::by_group::Held;
use crate::model::{Entry, P2pDirection, ProcessGroup, Trace};

#[derive(Debug, Clone, serde::Serialize)]
pub struct P2pMismatch {
    pub src: u32,
    pub dst: u32,
    /// 0-based position on the (src, dst) channel.
    pub index: usize,
    pub kind: P2pProblem,
    pub send_sizes: Option<Vec<Vec<i64>>>,
    pub recv_sizes: Option<Vec<Vec<i64>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum P2pProblem {
    /// Both sides posted, with different sizes.
    Size,
    /// A send whose receiver (which has a dump) never posted the recv.
    SendUnmatched,
    /// A recv whose sender (which has a dump) never posted the send.
    RecvUnmatched,
}

type Channel<'t> = (Vec<&'t Entry>, Vec<&'t Entry>);

/// `held`: what each dump holds of the group (by rank); only members' p2p ops are paired.
pub(super) fn align_p2p(
    trace: &Trace,
    group: &GroupAlignment,
    pg: &ProcessGroup,
    held: &[Held],
) -> Vec<P2pMismatch> {
    let global = |local: Option<u32>| local.and_then(|l| pg.members.get(l as usize).copied());
    let mut channels: FxHashMap<(u32, u32), Channel<'_>> = FxHashMap::default();
    for h in held.iter().filter(|h| !h.p2p.is_empty() && group.stream(h.rank).is_some()) {
        let Some(dump) = trace.rank(h.rank) else { continue };
        for e in h.p2p.iter().map(|&i| &dump.entries[i as usize]) {
            let Some(p2p) = e.op().p2p else { continue };
            let (Some(src), Some(dst)) = (global(p2p.src), global(p2p.dst)) else { continue };
            let channel = channels.entry((src, dst)).or_default();
            match p2p.direction {
                P2pDirection::Send => channel.0.push(e),
                P2pDirection::Recv => channel.1.push(e),
            }
        }
    }
    let mut out = Vec::new();
    let mut keys: Vec<_> = channels.keys().copied().collect();
    keys.sort_unstable();
    for (src, dst) in keys {
        let (sends, recvs) = &channels[&(src, dst)];
        for index in 0..sends.len().max(recvs.len()) {
            let (send, recv) = (sends.get(index), recvs.get(index));
            let kind = match (send, recv) {
                (Some(s), Some(r)) if s.input_sizes() != r.output_sizes() => P2pProblem::Size,
                (Some(_), None) if trace.rank(dst).is_some() => P2pProblem::SendUnmatched,
                (None, Some(_)) if trace.rank(src).is_some() => P2pProblem::RecvUnmatched,
                _ => continue,
            };
            out.push(P2pMismatch {
                src,
                dst,
                index,
                kind,
                send_sizes: send.map(|s| s.input_sizes().to_vec()),
                recv_sizes: recv.map(|r| r.output_sizes().to_vec()),
            });
        }
    }
    out
}
