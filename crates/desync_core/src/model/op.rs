//! Operation names parsed from `profiling_name` ("`nccl:all_reduce`", "gloo:send 0->1").
//!
//! Unlike torchfrtrace we accept any backend prefix and any op name: an unknown op is kept as
//! [`OpKind::Other`] and still aligned by sequence id, never an abort.

use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Op {
    /// As recorded, e.g. "nccl:send 0->1".
    pub profiling_name: Arc<str>,
    /// "nccl", "gloo", "xccl", "ncclx"... (empty when the name had no prefix).
    pub backend: Arc<str>,
    /// The op name without peers ("`all_reduce`", "send").
    pub name: Arc<str>,
    pub kind: OpKind,
    /// For send/recv: PG-local peers as written (`None` for recv from any source, "?").
    pub p2p: Option<P2p>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct P2p {
    pub direction: P2pDirection,
    pub src: Option<u32>,
    pub dst: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum P2pDirection {
    Send,
    Recv,
}

/// Families that decide which size and dtype rules apply when matching ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    Gather,
    Scatter,
    AllToAll,
    Barrier,
    /// Coalesced variants and the `coalesced` end marker.
    Coalesced,
    P2p,
    Other,
}

impl Op {
    pub fn parse(profiling_name: &str, intern: &mut impl FnMut(&str) -> Arc<str>) -> Self {
        let (backend, rest) = match profiling_name.split_once(':') {
            Some((b, r)) => (b, r),
            None => ("", profiling_name),
        };
        let mut words = rest.splitn(2, ' ');
        let name = words.next().unwrap_or("").trim();
        let peers = words.next().unwrap_or("").trim();
        let p2p = match name {
            "send" => Some(parse_peers(P2pDirection::Send, peers, "->")),
            "recv" => Some(parse_peers(P2pDirection::Recv, peers, "<-")),
            _ => None,
        };
        Self {
            profiling_name: intern(profiling_name),
            backend: intern(backend),
            name: intern(name),
            kind: OpKind::of(name),
            p2p,
        }
    }
}

/// "0->1" for send (src->dst), "1<-0" for recv (dst<-src); "?" means any source.
fn parse_peers(direction: P2pDirection, text: &str, arrow: &str) -> P2p {
    let (left, right) = text.split_once(arrow).unwrap_or(("", ""));
    let left = left.trim().parse().ok();
    let right = right.trim().parse().ok();
    match direction {
        P2pDirection::Send => P2p { direction, src: left, dst: right },
        P2pDirection::Recv => P2p { direction, src: right, dst: left },
    }
}

impl OpKind {
    pub fn of(name: &str) -> Self {
        match name {
            "all_reduce" | "allreduce" => Self::AllReduce,
            "all_gather"
            | "_all_gather_base"
            | "all_gather_single"
            | "all_gather_v"
            | "all_gather_into_tensor" => Self::AllGather,
            "reduce_scatter"
            | "_reduce_scatter_base"
            | "reduce_scatter_single"
            | "reduce_scatter_v"
            | "reduce_scatter_tensor" => Self::ReduceScatter,
            "broadcast" | "_broadcast_oop" => Self::Broadcast,
            "reduce" | "_reduce_oop" => Self::Reduce,
            "gather" => Self::Gather,
            "scatter" => Self::Scatter,
            "all_to_all"
            | "all_to_all_single"
            | "all_to_all_v_single"
            | "alltoall"
            | "alltoall_base" => Self::AllToAll,
            "barrier" | "all_reduce_barrier" => Self::Barrier,
            "send" | "recv" => Self::P2p,
            n if n.contains("coalesced") => Self::Coalesced,
            _ => Self::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Op {
        Op::parse(s, &mut |x: &str| Arc::from(x))
    }

    #[test]
    fn collective_names() {
        let op = parse("nccl:all_reduce");
        assert_eq!((&*op.backend, &*op.name, op.kind), ("nccl", "all_reduce", OpKind::AllReduce));
        assert_eq!(parse("gloo:barrier").kind, OpKind::Barrier);
        assert_eq!(parse("nccl:_all_gather_base").kind, OpKind::AllGather);
        assert_eq!(parse("ncclx:ALLGATHER_coalesced").kind, OpKind::Coalesced);
        assert_eq!(parse("rccl:something_new").kind, OpKind::Other);
        assert_eq!(&*parse("weird").name, "weird");
    }

    #[test]
    fn p2p_peers() {
        let send = parse("nccl:send 0->1").p2p.unwrap();
        assert_eq!((send.src, send.dst), (Some(0), Some(1)));
        let recv = parse("nccl:recv 1<-0").p2p.unwrap();
        assert_eq!((recv.src, recv.dst), (Some(0), Some(1)));
        let any = parse("nccl:recv 3<-?").p2p.unwrap();
        assert_eq!((any.src, any.dst), (None, Some(3)));
    }
}
