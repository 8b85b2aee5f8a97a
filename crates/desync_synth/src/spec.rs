//! What to generate: the user-facing description of a synthetic job.
//!
//! Role: plain data ([`Spec`] and its parts) plus the parsers for the CLI's
//! compact syntaxes (`--groups tp=8,dp`, `--fault divergence:ranks=3,seq=812`,
//! `--ops all_reduce=6,p2p=0`). Invariant: parsing never panics and every
//! error names the offending text; semantic checks that need the whole spec
//! (divisibility of the world size, fault ranks in range, ...) happen when a
//! [`crate::Plan`] is built.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A synthetic job: world, process groups, workload, fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Number of ranks (one dump file each, unless crashed).
    pub world_size: u32,
    /// Ring-buffer capacity (`TORCH_FR_BUFFER_SIZE`): at most this many
    /// entries per dump; older ones are dropped while `record_id` keeps
    /// counting.
    pub entries_per_rank: u32,
    /// Entries a healthy rank records before the dump. `None`: 1.5x
    /// `entries_per_rank`, so the ring buffer has wrapped.
    pub history: Option<u64>,
    /// Process groups besides the default one, in creation order (pg ids
    /// 1, 2, ...).
    pub groups: Vec<GroupSpec>,
    /// Relative frequency of each operation kind in the training step.
    pub ops: OpMix,
    /// Include `frames` (Python stacks) in pickle entries.
    pub frames: bool,
    /// Only entries not completed yet, as the recorder writes them when asked
    /// with `onlyactive=true` (`pg_status` still tells the completed seqs).
    pub only_active: bool,
    pub fault: Fault,
    /// State of the newest op on ranks that are not stuck (a dump taken
    /// while training runs catches the last op in flight).
    pub tail: TailState,
    pub seed: u64,
    /// Top-level `version` ("2.10").
    pub version: String,
    /// Top-level `comm_lib_version` (NCCL version).
    pub comm_lib_version: String,
    /// `timeout_ms` of every entry.
    pub timeout_ms: u64,
}

impl Spec {
    /// Defaults: no subgroups, default op mix, frames off, no fault, last op
    /// "started", seed 0, version "2.10", NCCL "2.28.9", 600 s timeout.
    pub fn new(world_size: u32, entries_per_rank: u32) -> Self {
        Spec {
            world_size,
            entries_per_rank,
            history: None,
            groups: Vec::new(),
            ops: OpMix::default(),
            frames: false,
            only_active: false,
            fault: Fault::None,
            tail: TailState::Started,
            seed: 0,
            version: "2.10".into(),
            comm_lib_version: "2.28.9".into(),
            timeout_ms: 600_000,
        }
    }

    /// Entries a healthy rank records (see [`Spec::history`]).
    pub fn history_entries(&self) -> u64 {
        self.history.unwrap_or(u64::from(self.entries_per_rank) * 3 / 2).max(1)
    }
}

/// A family of process groups that partitions the world (every rank is in
/// exactly one group of the family), like one `DeviceMesh` dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    /// Short label ("tp", "dp"); the groups' desc is `mesh_<name>`.
    pub name: String,
    pub layout: Layout,
}

/// How a [`GroupSpec`] splits the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Blocks of this many consecutive ranks: `[0..8), [8..16), ...`.
    Block(u32),
    /// Ranks congruent modulo this stride: `{0, 8, 16, ..}, {1, 9, ..}, ...`.
    Strided(u32),
}

/// Parses `tp=8,dp`, `tp=8,dp=s8`, `pp=4`: `NAME=N` is blocks of N
/// consecutive ranks, `NAME=sN` ranks strided by N, bare `NAME` strided by
/// the block size of the group before it (the usual TP x DP mesh).
pub fn parse_groups(text: &str) -> Result<Vec<GroupSpec>, Error> {
    let mut out: Vec<GroupSpec> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || Error::Spec(format!("bad group `{item}` (want NAME=N, NAME=sN or NAME)"));
        let (name, layout) = if let Some((name, size)) = item.split_once('=') {
            let layout = match size.strip_prefix('s') {
                Some(stride) => Layout::Strided(stride.parse().map_err(|_| bad())?),
                None => Layout::Block(size.parse().map_err(|_| bad())?),
            };
            (name, layout)
        } else {
            let stride = out
                .iter()
                .rev()
                .find_map(|g| match g.layout {
                    Layout::Block(b) => Some(b),
                    Layout::Strided(_) => None,
                })
                .ok_or_else(|| {
                    Error::Spec(format!("group `{item}` has no size and follows no block group"))
                })?;
            (item, Layout::Strided(stride))
        };
        let valid_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(bad());
        }
        if out.iter().any(|g| g.name == name) {
            return Err(Error::Spec(format!("group `{name}` given twice")));
        }
        out.push(GroupSpec { name: name.to_string(), layout });
    }
    Ok(out)
}

/// One kind of traced operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    AllReduce,
    /// `all_gather` into a list of tensors.
    AllGather,
    /// `all_gather_into_tensor` (`_all_gather_base`).
    AllGatherBase,
    /// `reduce_scatter_tensor` (`_reduce_scatter_base`).
    ReduceScatterBase,
    Broadcast,
    AllToAll,
    /// Fast-path `allreduce_coalesced`: one entry for several tensors.
    AllReduceCoalesced,
    /// `barrier()` (`all_reduce_barrier`).
    Barrier,
    /// A `batch_isend_irecv` pipeline batch: recv from the previous
    /// PG-local rank, send to the next, then the `coalesced` end marker.
    P2p,
}

impl OpKind {
    pub const ALL: [OpKind; 9] = [
        OpKind::AllReduce,
        OpKind::AllGather,
        OpKind::AllGatherBase,
        OpKind::ReduceScatterBase,
        OpKind::Broadcast,
        OpKind::AllToAll,
        OpKind::AllReduceCoalesced,
        OpKind::Barrier,
        OpKind::P2p,
    ];

    /// Name as written after `nccl:` (for P2p: the end marker's name).
    pub fn op_name(self) -> &'static str {
        match self {
            OpKind::AllReduce => "all_reduce",
            OpKind::AllGather => "all_gather",
            OpKind::AllGatherBase => "_all_gather_base",
            OpKind::ReduceScatterBase => "_reduce_scatter_base",
            OpKind::Broadcast => "broadcast",
            OpKind::AllToAll => "all_to_all",
            OpKind::AllReduceCoalesced => "allreduce_coalesced",
            OpKind::Barrier => "all_reduce_barrier",
            OpKind::P2p => "coalesced",
        }
    }

    /// Name used in `--ops` (`all_reduce`, `p2p`, ...).
    pub fn key(self) -> &'static str {
        match self {
            OpKind::AllGatherBase => "all_gather_base",
            OpKind::ReduceScatterBase => "reduce_scatter_base",
            OpKind::Barrier => "barrier",
            OpKind::P2p => "p2p",
            other => other.op_name(),
        }
    }
}

/// Relative weights of operation kinds in the generated training step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpMix {
    weights: [u32; 9],
}

impl Default for OpMix {
    fn default() -> Self {
        let mut m = OpMix { weights: [0; 9] };
        for (k, w) in [
            (OpKind::AllReduce, 6),
            (OpKind::AllGather, 2),
            (OpKind::AllGatherBase, 3),
            (OpKind::ReduceScatterBase, 3),
            (OpKind::Broadcast, 1),
            (OpKind::AllToAll, 1),
            (OpKind::AllReduceCoalesced, 1),
            (OpKind::Barrier, 0),
            (OpKind::P2p, 2),
        ] {
            m.set(k, w);
        }
        m
    }
}

impl OpMix {
    fn slot(kind: OpKind) -> usize {
        OpKind::ALL.iter().position(|&k| k == kind).unwrap_or(0)
    }

    pub fn weight(&self, kind: OpKind) -> u32 {
        self.weights[Self::slot(kind)]
    }

    pub fn set(&mut self, kind: OpKind, weight: u32) {
        self.weights[Self::slot(kind)] = weight;
    }

    /// A mix of only `kind`.
    pub fn only(kind: OpKind) -> Self {
        let mut m = OpMix { weights: [0; 9] };
        m.set(kind, 1);
        m
    }

    /// Starting from the default mix, applies `all_reduce=6,p2p=0,...`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut m = OpMix::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = || Error::Spec(format!("bad op weight `{item}` (want KIND=N)"));
            let (key, w) = item.split_once('=').ok_or_else(bad)?;
            let kind = OpKind::ALL.into_iter().find(|k| k.key() == key).ok_or_else(|| {
                let known: Vec<&str> = OpKind::ALL.iter().map(|k| k.key()).collect();
                Error::Spec(format!("unknown op `{key}` (known: {})", known.join(", ")))
            })?;
            m.set(kind, w.parse().map_err(|_| bad())?);
        }
        Ok(m)
    }

    pub(crate) fn weights(&self) -> &[u32; 9] {
        &self.weights
    }
}

/// State of the newest op on ranks that are not stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailState {
    Completed,
    Started,
    Scheduled,
}

impl FromStr for TailState {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "completed" => Ok(TailState::Completed),
            "started" => Ok(TailState::Started),
            "scheduled" => Ok(TailState::Scheduled),
            _ => Err(Error::Spec(format!("bad tail state `{s}` (completed|started|scheduled)"))),
        }
    }
}

/// Output flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `_dump_nccl_trace()`: torch C++ pickle.
    Pickle,
    /// `_dump_nccl_trace_json()`: nlohmann JSON (sorted keys, no frames).
    Json,
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "pickle" | "pkl" => Ok(Format::Pickle),
            "json" => Ok(Format::Json),
            _ => Err(Error::Spec(format!("bad format `{s}` (pickle|json)"))),
        }
    }
}

/// The injected failure. `at_seq` is a `collective_seq_id` in the fault's
/// process group (the default PG "0" unless said otherwise); the ranks are
/// global ranks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// At `at_seq` the faulty ranks issue a different collective from a
    /// different call site, then stop; their peers wait in the right one.
    /// `pg`: a group name from [`Spec::groups`] (`None`: default PG).
    Divergence { ranks: Vec<u32>, at_seq: u64, pg: Option<String> },
    /// Same op and call site at `at_seq`, different tensor sizes on the
    /// faulty ranks; everyone then hangs in it.
    MetadataMismatch { ranks: Vec<u32>, at_seq: u64 },
    /// The faulty ranks stop issuing before `at_seq` (e.g. stuck in Python);
    /// their peers enqueue `at_seq` and wait.
    Stall { ranks: Vec<u32>, at_seq: u64 },
    /// Everyone enqueues `at_seq`; on the faulty ranks the kernel never
    /// starts ("scheduled"), on the others it starts and never completes.
    GpuHang { ranks: Vec<u32>, at_seq: u64 },
    /// These ranks write no dump file.
    Crash { ranks: Vec<u32> },
    /// No hang: this rank enqueues every op `delay_ms` later than its peers.
    Straggler { rank: u32, delay_ms: u32 },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranks = |r: &[u32]| r.iter().map(u32::to_string).collect::<Vec<_>>().join("+");
        match self {
            Fault::None => f.write_str("none"),
            Fault::Divergence { ranks: r, at_seq, pg } => {
                write!(f, "divergence:ranks={},seq={at_seq}", ranks(r))?;
                if let Some(pg) = pg {
                    write!(f, ",pg={pg}")?;
                }
                Ok(())
            }
            Fault::MetadataMismatch { ranks: r, at_seq } => {
                write!(f, "mismatch:ranks={},seq={at_seq}", ranks(r))
            }
            Fault::Stall { ranks: r, at_seq } => write!(f, "stall:ranks={},seq={at_seq}", ranks(r)),
            Fault::GpuHang { ranks: r, at_seq } => {
                write!(f, "gpuhang:ranks={},seq={at_seq}", ranks(r))
            }
            Fault::Crash { ranks: r } => write!(f, "crash:ranks={}", ranks(r)),
            Fault::Straggler { rank, delay_ms } => write!(f, "straggler:rank={rank},ms={delay_ms}"),
        }
    }
}

/// `3`, `3+5+9`, `8..12` (exclusive end), `8..=11`, or a mix: `0+8..10`.
fn parse_ranks(text: &str) -> Result<Vec<u32>, Error> {
    let bad = || Error::Spec(format!("bad rank list `{text}` (e.g. 3, 3+5, 8..12, 8..=11)"));
    let mut out = Vec::new();
    for part in text.split('+') {
        if let Some((a, b)) = part.split_once("..=") {
            let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            out.extend(a..=b);
        } else if let Some((a, b)) = part.split_once("..") {
            let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            out.extend(a..b);
        } else {
            out.push(part.parse().map_err(|_| bad())?);
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

impl FromStr for Fault {
    type Err = Error;

    /// `none`, `divergence:ranks=3,seq=812[,pg=tp]`, `mismatch:ranks=3,seq=5`,
    /// `stall:ranks=2+3,seq=40`, `gpuhang:ranks=1,seq=9`, `crash:ranks=5`,
    /// `straggler:rank=5[,ms=20]`.
    fn from_str(text: &str) -> Result<Self, Error> {
        let (kind, args) = text.split_once(':').unwrap_or((text, ""));
        let mut ranks = None;
        let mut seq = None;
        let mut pg = None;
        let mut ms = None;
        for kv in args.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                Error::Spec(format!("bad fault argument `{kv}` (want KEY=VALUE)"))
            })?;
            let num = |v: &str| {
                v.parse::<u64>().map_err(|_| Error::Spec(format!("bad number in `{kv}`")))
            };
            match k {
                "ranks" | "rank" => ranks = Some(parse_ranks(v)?),
                "seq" | "at_seq" => seq = Some(num(v)?),
                "pg" => pg = Some(v.to_string()),
                "ms" | "delay_ms" => ms = Some(num(v)?),
                _ => return Err(Error::Spec(format!("unknown fault argument `{k}`"))),
            }
        }
        let need_ranks =
            || ranks.clone().ok_or_else(|| Error::Spec(format!("fault `{text}` needs ranks=")));
        let need_seq = || seq.ok_or_else(|| Error::Spec(format!("fault `{text}` needs seq=")));
        let fault = match kind {
            "none" => Fault::None,
            "divergence" | "diverge" => {
                Fault::Divergence { ranks: need_ranks()?, at_seq: need_seq()?, pg: pg.clone() }
            }
            "mismatch" | "metadata" | "metadata-mismatch" => {
                Fault::MetadataMismatch { ranks: need_ranks()?, at_seq: need_seq()? }
            }
            "stall" => Fault::Stall { ranks: need_ranks()?, at_seq: need_seq()? },
            "gpuhang" | "gpu-hang" | "hang" => {
                Fault::GpuHang { ranks: need_ranks()?, at_seq: need_seq()? }
            }
            "crash" => Fault::Crash { ranks: need_ranks()? },
            "straggler" => {
                let r = need_ranks()?;
                let [rank] = r[..] else {
                    return Err(Error::Spec("straggler takes exactly one rank".into()));
                };
                let delay_ms = u32::try_from(ms.unwrap_or(20))
                    .map_err(|_| Error::Spec("straggler delay too large".into()))?;
                Fault::Straggler { rank, delay_ms }
            }
            _ => return Err(Error::Spec(format!("unknown fault kind `{kind}`"))),
        };
        let pg_ok = pg.is_none() || matches!(fault, Fault::Divergence { .. });
        if !pg_ok {
            return Err(Error::Spec("only divergence takes pg=".into()));
        }
        Ok(fault)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups() {
        let g = parse_groups("tp=8,dp").unwrap();
        assert_eq!(g[0], GroupSpec { name: "tp".into(), layout: Layout::Block(8) });
        assert_eq!(g[1], GroupSpec { name: "dp".into(), layout: Layout::Strided(8) });
        let g = parse_groups("pp=s4").unwrap();
        assert_eq!(g[0].layout, Layout::Strided(4));
        assert!(parse_groups("dp").is_err());
        assert!(parse_groups("tp=x").is_err());
        assert!(parse_groups("tp=2,tp=4").is_err());
        assert!(parse_groups("").unwrap().is_empty());
    }

    #[test]
    fn faults() {
        let f: Fault = "divergence:ranks=3,seq=812".parse().unwrap();
        assert_eq!(f, Fault::Divergence { ranks: vec![3], at_seq: 812, pg: None });
        assert_eq!(f.to_string(), "divergence:ranks=3,seq=812");
        let f: Fault = "stall:ranks=8..10+1,seq=4".parse().unwrap();
        assert_eq!(f, Fault::Stall { ranks: vec![1, 8, 9], at_seq: 4 });
        let f: Fault = "divergence:ranks=0..=1,seq=2,pg=tp".parse().unwrap();
        assert_eq!(f.to_string(), "divergence:ranks=0+1,seq=2,pg=tp");
        assert_eq!(
            "straggler:rank=5".parse::<Fault>().unwrap(),
            Fault::Straggler { rank: 5, delay_ms: 20 }
        );
        for bad in
            ["divergence:ranks=3", "stall:seq=3", "crash", "x:ranks=1", "crash:ranks=1,pg=tp"]
        {
            assert!(bad.parse::<Fault>().is_err(), "{bad}");
        }
        for f in ["none", "mismatch:ranks=1,seq=2", "gpuhang:ranks=1,seq=2", "crash:ranks=1+2"] {
            assert_eq!(f.parse::<Fault>().unwrap().to_string(), f);
        }
    }

    #[test]
    fn op_mix() {
        let m = OpMix::parse("p2p=0,all_reduce=9").unwrap();
        assert_eq!(m.weight(OpKind::P2p), 0);
        assert_eq!(m.weight(OpKind::AllReduce), 9);
        assert_eq!(m.weight(OpKind::AllGatherBase), 3);
        assert!(OpMix::parse("nope=1").is_err());
    }
}
