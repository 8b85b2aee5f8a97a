//! The compiled job: process groups, the repeating training step, call sites,
//! timing and fault resolution, and the per-rank simulation.
//!
//! Role: turn a [`Spec`] into everything that is shared by all ranks, once;
//! then let any rank replay its own history independently (in parallel, in
//! any order) through [`Plan::simulate`].
//!
//! Model and invariants:
//! - Every rank runs the same program: global op `g` is template op
//!   `g % template.len()`, issued on the rank's own instance of the op's
//!   group family ("class"). So per-PG sequence numbers agree across members
//!   without any coordination.
//! - Counters follow `ProcessGroupNCCL`: `collective_seq_id` +1 per collective
//!   (p2p entries carry it without incrementing), `p2p_seq_id` +1 per p2p
//!   batch, `op_id` +1 per op (the batch's `coalesced` end marker reuses the
//!   last one), `record_id` +1 per entry of the process.
//! - Faults make ranks *stuck* at a global op: `stuck[r]` is the op rank `r`
//!   enqueues last (or, for a stalled rank, the op it never enqueues).
//!   Being stuck spreads: any later op whose group instance holds a stuck
//!   rank blocks all its members. Computed once, O(world x ops-until-fixpoint).
//! - Time is a closed form of `(seed, rank, op)`: op `g` is launched at
//!   `T_g` (gaps summed along the way), each rank adds a fixed skew and a
//!   jitter, and a collective ends when its slowest possible member has
//!   arrived plus the kernel time, so all members agree on the end without
//!   looking at each other.

use std::fmt::Write;

use crate::Error;
use crate::rng::{Rng, mix, mix_range};
use crate::spec::{Fault, Layout, OpKind, Spec, TailState};

/// `mix` key domains, so unrelated draws never collide.
const K_GAP: u64 = 1;
const K_STEP: u64 = 2;
const K_SKEW: u64 = 3;
const K_JITTER: u64 = 4;
const K_LAUNCH: u64 = 5;
const K_POLL_START: u64 = 6;
const K_POLL_END: u64 = 7;
const K_THREAD: u64 = 8;
const K_NAME: u64 = 9;
const K_BASE: u64 = 10;

/// Clock skew between ranks is below this.
const MAX_SKEW_NS: u64 = 300_000;
/// Per-op launch jitter is below this.
const MAX_JITTER_NS: u64 = 40_000;

const C10D: &str = "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py";
const LOGGER: &str = "/usr/local/lib/python3.12/dist-packages/torch/distributed/c10d_logger.py";
const CONTEXTLIB: &str = "/usr/lib/python3.12/contextlib.py";
const TRAIN: &str = "/workspace/train.py";

/// One group family: the default PG, or one `GroupSpec`.
#[derive(Debug)]
pub(crate) struct Class {
    pub label: String,
    pub desc: String,
    pub layout: Layout,
    /// Members per instance.
    pub size: u32,
    /// Number of instances (groups) in the family.
    pub count: u32,
    /// Process-local PG uid (creation order; the same on every rank).
    pub pg_id: u32,
}

impl Class {
    pub fn instance(&self, rank: u32) -> u32 {
        match self.layout {
            Layout::Block(b) => rank / b,
            Layout::Strided(s) => rank % s,
        }
    }

    pub fn local(&self, rank: u32) -> u32 {
        match self.layout {
            Layout::Block(b) => rank % b,
            Layout::Strided(s) => rank / s,
        }
    }

    pub fn member(&self, instance: u32, local: u32) -> u32 {
        match self.layout {
            Layout::Block(b) => instance * b + local,
            Layout::Strided(s) => local * s + instance,
        }
    }

    /// `"[0, 1, 2]"`, as `ranks_str` in TraceUtils.h formats it.
    pub fn ranks_str(&self, instance: u32) -> String {
        let mut s = String::with_capacity(self.size as usize * 7 + 2);
        s.push('[');
        for l in 0..self.size {
            if l > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{}", self.member(instance, l));
        }
        s.push(']');
        s
    }

    /// PG name: "0" for the default PG, else a SHA-1-looking hex digest of
    /// the member list (what `use_hashed_name` groups look like).
    pub fn pg_name(&self, seed: u64, instance: u32) -> String {
        if self.pg_id == 0 {
            return "0".into();
        }
        let mut lanes = [0u64; 3];
        for (i, lane) in lanes.iter_mut().enumerate() {
            let mut h = mix(seed, &[K_NAME, i as u64, u64::from(self.pg_id)]);
            for l in 0..self.size {
                h = mix(h, &[u64::from(self.member(instance, l))]);
            }
            *lane = h;
        }
        let hex = format!("{:016x}{:016x}{:016x}", lanes[0], lanes[1], lanes[2]);
        hex[..40].to_string()
    }
}

/// A Python frame of a call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameDef {
    pub name: &'static str,
    pub file: &'static str,
    pub line: u32,
}

/// One operation of the training step (or a fault's replacement for one).
#[derive(Debug, Clone)]
pub(crate) struct TOp {
    pub kind: OpKind,
    pub class: usize,
    /// `nccl:<op>` (for P2p: the end marker).
    pub profiling_name: String,
    pub in_sizes: Vec<Vec<i64>>,
    pub out_sizes: Vec<Vec<i64>>,
    pub dtypes: Vec<&'static str>,
    pub callsite: usize,
    pub kernel_ns: u64,
}

/// How a stuck rank's last op looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stuck {
    /// Enqueued, kernel started, waits for peers forever.
    Waiting,
    /// Enqueued, kernel never started (GPU hang).
    NotStarted,
    /// Never enqueued (the rank stalled before it).
    NotIssued,
    /// Enqueued the divergent op instead, which started.
    Diverged,
    /// Enqueued with mismatching sizes, started.
    Mismatched,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Scheduled,
    Started,
    Completed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Scheduled => "scheduled",
            State::Started => "started",
            State::Completed => "completed",
        }
    }
}

/// One FR entry as the simulation produces it (borrowing shared data).
#[derive(Debug)]
pub(crate) struct Entry<'a> {
    pub record_id: u64,
    pub class: usize,
    pub collective_seq_id: u64,
    pub p2p_seq_id: u64,
    pub op_id: u64,
    pub profiling_name: &'a str,
    pub time_created_ns: i64,
    pub duration_ms: Option<f64>,
    pub in_sizes: &'a [Vec<i64>],
    pub out_sizes: &'a [Vec<i64>],
    pub dtypes: &'a [&'static str],
    pub state: State,
    pub started_ns: Option<i64>,
    pub completed_ns: Option<i64>,
    pub retired: bool,
    pub is_p2p: bool,
    pub callsite: usize,
}

/// `pg_status` of one PG: -1 when none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PgStatus {
    pub enqueued: i64,
    pub started: i64,
    pub completed: i64,
}

/// Per-rank, per-class names the entries need.
#[derive(Debug)]
pub(crate) struct RankClass {
    pub pg_name: String,
    pub ranks: String,
    pub send_name: String,
    pub recv_name: String,
    pub local: u32,
}

/// A compiled [`Spec`]: shared, read-only, cheap to use from many threads.
#[derive(Debug)]
pub struct Plan {
    pub(crate) spec: Spec,
    pub(crate) classes: Vec<Class>,
    pub(crate) template: Vec<TOp>,
    pub(crate) frames: Vec<FrameDef>,
    pub(crate) callsites: Vec<Vec<usize>>,
    pub(crate) total_ops: u64,
    base_ns: u64,
    /// Op index each rank stops at (`u64::MAX`: runs to the end).
    stuck: Vec<u64>,
    /// How the fault's own ranks look at `fault_op` (others: `Waiting`).
    faulty_mode: Stuck,
    faulty: Vec<u32>,
    fault_op: u64,
    /// Replacement op for faulty ranks at `fault_op` (divergence/mismatch).
    replacement: Option<TOp>,
    crashed: Vec<u32>,
    straggler: Option<(u32, u64)>,
    /// Where the fault hits, for callers that assert on analysis results.
    fault_site: Option<FaultSite>,
}

/// Where an injected fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSite {
    /// Group family label ("default", or a [`crate::GroupSpec`] name).
    pub class: String,
    /// PG desc (`default_pg`, `mesh_tp`, ...).
    pub pg_desc: String,
    /// `collective_seq_id` of the op in that PG.
    pub seq: u64,
    /// `nccl:<op>` of the op the healthy ranks issue there.
    pub profiling_name: String,
}

fn dtype_bytes(dtype: &str) -> u64 {
    match dtype {
        "Float" | "Int" => 4,
        "Long" | "Double" => 8,
        _ => 2,
    }
}

/// Sizes of `kind` on a group of `gs` ranks, from a per-rank base shape.
fn sizes_for(
    kind: OpKind,
    gs: u32,
    base: &[i64],
    extra: &[Vec<i64>],
) -> (Vec<Vec<i64>>, Vec<Vec<i64>>) {
    let gs = i64::from(gs);
    let scaled = |s: &[i64]| {
        let mut v = s.to_vec();
        v[0] *= gs;
        v
    };
    match kind {
        OpKind::AllGather => {
            let mut out = vec![gs];
            out.extend_from_slice(base);
            (vec![base.to_vec()], vec![out])
        }
        OpKind::AllGatherBase => (vec![base.to_vec()], vec![scaled(base)]),
        OpKind::ReduceScatterBase => (vec![scaled(base)], vec![base.to_vec()]),
        OpKind::AllToAll => (vec![scaled(base)], vec![scaled(base)]),
        OpKind::AllReduceCoalesced => {
            let mut all = vec![base.to_vec()];
            all.extend_from_slice(extra);
            (all.clone(), all)
        }
        OpKind::Barrier => (vec![vec![1]], vec![vec![1]]),
        _ => (vec![base.to_vec()], vec![base.to_vec()]),
    }
}

struct Builder<'s> {
    spec: &'s Spec,
    classes: Vec<Class>,
    frames: Vec<FrameDef>,
    callsites: Vec<Vec<usize>>,
}

impl Builder<'_> {
    fn frame(&mut self, name: &'static str, file: &'static str, line: u32) -> usize {
        let f = FrameDef { name, file, line };
        if let Some(i) = self.frames.iter().position(|x| *x == f) {
            return i;
        }
        self.frames.push(f);
        self.frames.len() - 1
    }

    /// Frames (innermost first) for `kind` called from user function
    /// `user` at `user_line`, itself called from `train_step` at `step_line`.
    fn callsite(
        &mut self,
        kind: OpKind,
        user: (&'static str, &'static str, u32),
        step_line: u32,
    ) -> usize {
        let mut frames = Vec::new();
        match kind {
            OpKind::P2p => frames.push(self.frame("batch_isend_irecv", C10D, 2940)),
            OpKind::AllReduceCoalesced => {
                frames.push(self.frame("_coalescing_manager", C10D, 2757));
                frames.push(self.frame("__exit__", CONTEXTLIB, 144));
            }
            _ => {
                let (name, line) = match kind {
                    OpKind::AllGather => ("all_gather", 4079),
                    OpKind::AllGatherBase => ("all_gather_into_tensor", 4195),
                    OpKind::ReduceScatterBase => ("reduce_scatter_tensor", 4662),
                    OpKind::Broadcast => ("broadcast", 2872),
                    OpKind::AllToAll => ("all_to_all_single", 4895),
                    OpKind::Barrier => ("barrier", 5030),
                    _ => ("all_reduce", 3068),
                };
                frames.push(self.frame(name, C10D, line));
                frames.push(self.frame("wrapper", LOGGER, 83));
            }
        }
        frames.push(self.frame(user.0, user.1, user.2));
        frames.push(self.frame("train_step", TRAIN, step_line));
        frames.push(self.frame("main", TRAIN, 512));
        frames.push(self.frame("<module>", TRAIN, 530));
        self.callsites.push(frames);
        self.callsites.len() - 1
    }

    fn user_fn(kind: OpKind, default_class: bool) -> (&'static str, &'static str, u32) {
        match kind {
            OpKind::AllReduce if default_class => ("all_reduce_metrics", TRAIN, 118),
            OpKind::AllReduce => ("reduce_gradients", "/workspace/trainer/ddp.py", 211),
            OpKind::AllGather | OpKind::AllGatherBase => {
                ("gather_params", "/workspace/trainer/fsdp.py", 96)
            }
            OpKind::ReduceScatterBase => {
                ("reduce_scatter_grads", "/workspace/trainer/fsdp.py", 158)
            }
            OpKind::Broadcast => ("sync_buffers", TRAIN, 84),
            OpKind::AllToAll => ("dispatch_tokens", "/workspace/model/moe.py", 142),
            OpKind::AllReduceCoalesced => ("clip_grad_norm_", "/workspace/trainer/optim.py", 61),
            OpKind::Barrier => ("checkpoint_barrier", TRAIN, 301),
            OpKind::P2p => ("send_forward_recv", "/workspace/trainer/pipeline.py", 77),
        }
    }

    fn pick_class(&self, kind: OpKind, rng: &mut Rng) -> usize {
        let sub: Vec<usize> = (1..self.classes.len()).collect();
        let p2p_ok: Vec<usize> =
            (0..self.classes.len()).filter(|&c| self.classes[c].size >= 2).collect();
        let pick = |rng: &mut Rng, from: &[usize]| from[rng.below(from.len() as u64) as usize];
        match kind {
            OpKind::Broadcast | OpKind::Barrier => 0,
            OpKind::P2p if p2p_ok.is_empty() => 0,
            OpKind::P2p => pick(rng, &p2p_ok),
            OpKind::AllGather | OpKind::AllGatherBase | OpKind::ReduceScatterBase
                if !sub.is_empty() =>
            {
                pick(rng, &sub)
            }
            _ if sub.is_empty() || rng.chance(0.4) => 0,
            _ => pick(rng, &sub),
        }
    }

    fn base_shape(rng: &mut Rng) -> Vec<i64> {
        if rng.chance(0.6) {
            vec![1i64 << rng.range(10, 22)]
        } else {
            vec![1i64 << rng.range(2, 10), [1024, 4096][rng.below(2) as usize]]
        }
    }

    fn make_op(
        &self,
        kind: OpKind,
        class: usize,
        base: &[i64],
        extra: &[Vec<i64>],
        dtype: &'static str,
        callsite: usize,
    ) -> TOp {
        let gs = self.classes[class].size;
        let (in_sizes, out_sizes) = sizes_for(kind, gs, base, extra);
        let ntensors = in_sizes.len();
        let dtype = if kind == OpKind::Barrier { "Float" } else { dtype };
        let numel: i64 =
            out_sizes.iter().chain(&in_sizes).map(|s| s.iter().product::<i64>()).max().unwrap_or(1);
        let bytes = numel.unsigned_abs() * dtype_bytes(dtype);
        TOp {
            kind,
            class,
            profiling_name: format!("nccl:{}", kind.op_name()),
            in_sizes,
            out_sizes,
            dtypes: vec![dtype; ntensors],
            callsite,
            // ~200 GB/s bus bandwidth plus launch latency, capped.
            kernel_ns: (12_000 + bytes / 200).min(5_000_000),
        }
    }

    fn template(&mut self, rng: &mut Rng) -> Vec<TOp> {
        let n = 8 + rng.below(9) as usize;
        let weights = *self.spec.ops.weights();
        let ncls = self.classes.len();
        let mut coll = vec![0u32; ncls];
        let mut p2p = vec![0u32; ncls];
        let mut ops = Vec::new();
        let mut i = 0;
        // A p2p batch drawn before its PG is ready (see below) waits here
        // while collectives are added to that PG.
        let mut pending_p2p: Option<usize> = None;
        // Every class needs collectives (faults are addressed by collective
        // seq): after the drawn ops, classes without one get an all_reduce.
        while i < n || coll.contains(&0) {
            let (mut kind, mut class) = if let Some(c) = pending_p2p.take() {
                (OpKind::P2p, c)
            } else if i == 0 || i >= n {
                let class = if i >= n { coll.iter().position(|&c| c == 0).unwrap_or(0) } else { 0 };
                (OpKind::AllReduce, class)
            } else {
                let kind = rng.weighted(&weights).map_or(OpKind::AllReduce, |k| OpKind::ALL[k]);
                (kind, self.pick_class(kind, rng))
            };
            // A p2p batch needs a group of two and, so that fr_trace's
            // coalesced-group detection (which compares p2p_seq_id with
            // collective_seq_id) never joins unrelated entries, at least
            // two more collectives than p2p batches on that PG so far.
            if kind == OpKind::P2p {
                if self.classes[class].size < 2 {
                    kind = OpKind::AllReduce;
                    class = 0;
                } else if coll[class] < p2p[class] + 2 {
                    kind = OpKind::AllReduce;
                    if i < n {
                        pending_p2p = Some(class);
                    }
                }
            }
            let default_class = class == 0;
            let user = Self::user_fn(kind, default_class);
            let user = (user.0, user.1, user.2 + (i as u32) * 7);
            let callsite = self.callsite(kind, user, 200 + (i as u32) * 3);
            let base = Self::base_shape(rng);
            let extra: Vec<Vec<i64>> =
                (0..rng.range(1, 3)).map(|_| Self::base_shape(rng)).collect();
            let dtype = if rng.chance(0.7) { "BFloat16" } else { "Float" };
            ops.push(self.make_op(kind, class, &base, &extra, dtype, callsite));
            if kind == OpKind::P2p {
                p2p[class] += 1;
            } else {
                coll[class] += 1;
            }
            i += 1;
        }
        ops
    }
}

impl Plan {
    /// Compiles and validates a spec.
    pub fn new(spec: &Spec) -> Result<Plan, Error> {
        let ws = spec.world_size;
        if ws == 0 {
            return Err(Error::Spec("world size must be at least 1".into()));
        }
        if spec.entries_per_rank == 0 {
            return Err(Error::Spec("entries per rank must be at least 1".into()));
        }
        let mut classes = vec![Class {
            label: "default".into(),
            desc: "default_pg".into(),
            layout: Layout::Block(ws),
            size: ws,
            count: 1,
            pg_id: 0,
        }];
        for (i, g) in spec.groups.iter().enumerate() {
            let (size, count) = match g.layout {
                Layout::Block(b) if b > 0 && ws.is_multiple_of(b) => (b, ws / b),
                Layout::Strided(s) if s > 0 && ws.is_multiple_of(s) => (ws / s, s),
                Layout::Block(n) | Layout::Strided(n) => {
                    return Err(Error::Spec(format!(
                        "group `{}`: world size {ws} is not a multiple of {n}",
                        g.name
                    )));
                }
            };
            classes.push(Class {
                label: g.name.clone(),
                desc: format!("mesh_{}", g.name),
                layout: g.layout,
                size,
                count,
                pg_id: i as u32 + 1,
            });
        }
        let mut b = Builder { spec, classes, frames: Vec::new(), callsites: Vec::new() };
        let mut rng = Rng::new(spec.seed);
        let template = b.template(&mut rng);

        // Ops until a healthy rank has recorded the requested history.
        let per_step: u64 =
            template.iter().map(|t| if t.kind == OpKind::P2p { 3 } else { 1 }).sum();
        let history = spec.history_entries();
        let t_len = template.len() as u64;
        let mut total_ops = history / per_step * t_len;
        let mut counted = history / per_step * per_step;
        while counted < history {
            let t = &template[(total_ops % t_len) as usize];
            counted += if t.kind == OpKind::P2p { 3 } else { 1 };
            total_ops += 1;
        }

        let mut plan = Plan {
            spec: spec.clone(),
            classes: b.classes,
            template,
            frames: b.frames,
            callsites: b.callsites,
            total_ops,
            base_ns: 1_795_343_000_000_000_000
                + mix_range(spec.seed, &[K_BASE], 0, 999_000_000_000),
            stuck: Vec::new(),
            faulty_mode: Stuck::Waiting,
            faulty: Vec::new(),
            fault_op: u64::MAX,
            replacement: None,
            crashed: Vec::new(),
            straggler: None,
            fault_site: None,
        };
        plan.resolve_fault(&mut rng)?;
        Ok(plan)
    }

    fn check_ranks(&self, ranks: &[u32]) -> Result<(), Error> {
        match ranks.iter().find(|&&r| r >= self.spec.world_size) {
            Some(r) => {
                Err(Error::Spec(format!("fault rank {r} >= world size {}", self.spec.world_size)))
            }
            None if ranks.is_empty() => Err(Error::Spec("fault needs at least one rank".into())),
            None => Ok(()),
        }
    }

    /// The global op index of the collective with `collective_seq_id == seq`
    /// on `class`.
    fn op_of_seq(&self, class: usize, seq: u64) -> Result<u64, Error> {
        let t_len = self.template.len() as u64;
        let per_step =
            self.template.iter().filter(|t| t.class == class && t.kind != OpKind::P2p).count()
                as u64;
        if seq == 0 || per_step == 0 {
            return Err(Error::Spec(format!(
                "no collective with seq {seq} on `{}`",
                self.classes[class].label
            )));
        }
        let mut g = (seq - 1) / per_step * t_len;
        let mut n = (seq - 1) / per_step * per_step;
        loop {
            let t = &self.template[(g % t_len) as usize];
            if t.class == class && t.kind != OpKind::P2p {
                n += 1;
                if n == seq {
                    break;
                }
            }
            g += 1;
        }
        if g >= self.total_ops {
            return Err(Error::Spec(format!(
                "seq {seq} on `{}` is beyond the simulated history (raise --history or lower seq)",
                self.classes[class].label
            )));
        }
        Ok(g)
    }

    fn resolve_fault(&mut self, rng: &mut Rng) -> Result<(), Error> {
        let fault = self.spec.fault.clone();
        let (ranks, at_seq, class, mode) = match &fault {
            Fault::None => return Ok(()),
            Fault::Crash { ranks } => {
                self.check_ranks(ranks)?;
                self.crashed.clone_from(ranks);
                return Ok(());
            }
            Fault::Straggler { rank, delay_ms } => {
                self.check_ranks(&[*rank])?;
                self.straggler = Some((*rank, u64::from(*delay_ms) * 1_000_000));
                return Ok(());
            }
            Fault::Divergence { ranks, at_seq, pg } => {
                let class = match pg.as_deref() {
                    None | Some("default" | "0" | "default_pg") => 0,
                    Some(name) => {
                        self.classes.iter().position(|c| c.label == name).ok_or_else(|| {
                            Error::Spec(format!("fault pg `{name}` is not one of the groups"))
                        })?
                    }
                };
                (ranks, *at_seq, class, Stuck::Diverged)
            }
            Fault::MetadataMismatch { ranks, at_seq } => (ranks, *at_seq, 0, Stuck::Mismatched),
            Fault::Stall { ranks, at_seq } => (ranks, *at_seq, 0, Stuck::NotIssued),
            Fault::GpuHang { ranks, at_seq } => (ranks, *at_seq, 0, Stuck::NotStarted),
        };
        self.check_ranks(ranks)?;
        let g = self.op_of_seq(class, at_seq)?;
        let top = self.template[(g % self.template.len() as u64) as usize].clone();
        self.fault_site = Some(FaultSite {
            class: self.classes[class].label.clone(),
            pg_desc: self.classes[class].desc.clone(),
            seq: at_seq,
            profiling_name: top.profiling_name.clone(),
        });
        self.replacement = match mode {
            Stuck::Diverged => {
                let kind = if top.kind == OpKind::AllReduce {
                    OpKind::AllGather
                } else {
                    OpKind::AllReduce
                };
                let mut b = Builder {
                    spec: &self.spec,
                    classes: std::mem::take(&mut self.classes),
                    frames: std::mem::take(&mut self.frames),
                    callsites: std::mem::take(&mut self.callsites),
                };
                let callsite = b.callsite(kind, ("evaluate", TRAIN, 431), 260);
                let base = Builder::base_shape(rng);
                let op = b.make_op(kind, class, &base, &[], top.dtypes[0], callsite);
                self.classes = b.classes;
                self.frames = b.frames;
                self.callsites = b.callsites;
                Some(op)
            }
            Stuck::Mismatched => {
                let mut op = top.clone();
                for s in op.in_sizes.iter_mut().chain(op.out_sizes.iter_mut()) {
                    match s.last_mut() {
                        Some(last) => *last += 1,
                        None => s.push(1),
                    }
                }
                Some(op)
            }
            _ => None,
        };
        self.faulty.clone_from(ranks);
        self.faulty_mode = mode;
        self.fault_op = g;
        self.propagate(g, class);
        Ok(())
    }

    /// Fills `stuck`: the fault's ranks and their group at `g0`, then every
    /// later op whose group instance holds a stuck rank blocks its members.
    fn propagate(&mut self, g0: u64, class0: usize) {
        let ws = self.spec.world_size as usize;
        let mut stuck = vec![u64::MAX; ws];
        let mut stuck_ranks: Vec<u32> = Vec::new();
        let c0 = &self.classes[class0];
        let mut hit = vec![false; c0.count as usize];
        for &r in &self.faulty {
            hit[c0.instance(r) as usize] = true;
        }
        for r in 0..self.spec.world_size {
            if hit[c0.instance(r) as usize] {
                stuck[r as usize] = g0;
                stuck_ranks.push(r);
            }
        }
        let t_len = self.template.len() as u64;
        let mut quiet = 0u64;
        let mut g = g0 + 1;
        while g < self.total_ops && stuck_ranks.len() < ws && quiet <= t_len {
            let class = &self.classes[self.template[(g % t_len) as usize].class];
            let mut blocked = vec![false; class.count as usize];
            for &r in &stuck_ranks {
                blocked[class.instance(r) as usize] = true;
            }
            let before = stuck_ranks.len();
            for r in 0..self.spec.world_size {
                if stuck[r as usize] == u64::MAX && blocked[class.instance(r) as usize] {
                    stuck[r as usize] = g;
                    stuck_ranks.push(r);
                }
            }
            quiet = if stuck_ranks.len() == before { quiet + 1 } else { 0 };
            g += 1;
        }
        self.stuck = stuck;
    }

    /// The spec this plan was built from.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Whether `rank` writes a dump (crashed ranks do not).
    pub fn has_dump(&self, rank: u32) -> bool {
        rank < self.spec.world_size && !self.crashed.contains(&rank)
    }

    /// Where the injected fault hits (`None` for none/crash/straggler).
    pub fn fault_site(&self) -> Option<&FaultSite> {
        self.fault_site.as_ref()
    }

    /// Number of operations in one training step.
    pub fn step_len(&self) -> usize {
        self.template.len()
    }

    fn gap_after(&self, g: u64) -> u64 {
        let mut gap = mix_range(self.spec.seed, &[K_GAP, g], 150_000, 1_500_000);
        if (g + 1).is_multiple_of(self.template.len() as u64) {
            gap += mix_range(self.spec.seed, &[K_STEP, g], 3_000_000, 20_000_000);
        }
        gap
    }

    /// Decimal `std::thread::id` of the rank's main thread.
    pub(crate) fn thread_id(&self, rank: u32) -> String {
        (139_600_000_000_000
            + mix_range(self.spec.seed, &[K_THREAD, u64::from(rank)], 0, 999_999_999_999))
        .to_string()
    }

    pub(crate) fn rank_classes(&self, rank: u32) -> Vec<RankClass> {
        self.classes
            .iter()
            .map(|c| {
                let inst = c.instance(rank);
                let local = c.local(rank);
                RankClass {
                    pg_name: c.pg_name(self.spec.seed, inst),
                    ranks: c.ranks_str(inst),
                    send_name: format!("nccl:send {local}->{}", local + 1),
                    recv_name: format!("nccl:recv {local}<-{}", local.wrapping_sub(1)),
                    local,
                }
            })
            .collect()
    }

    /// Replays `rank`'s history, calling `visit` for every entry in order,
    /// and returns the final `pg_status` per class.
    pub(crate) fn simulate(
        &self,
        rank: u32,
        rc: &[RankClass],
        mut visit: impl FnMut(&Entry<'_>),
    ) -> Vec<PgStatus> {
        let seed = self.spec.seed;
        let r = u64::from(rank);
        let ncls = self.classes.len();
        let mut seq = vec![0u64; ncls];
        let mut p2p = vec![0u64; ncls];
        let mut op_id = vec![0u64; ncls];
        let mut status = vec![PgStatus { enqueued: -1, started: -1, completed: -1 }; ncls];
        let mut record_id = 0u64;
        let stop = self.stuck.get(rank as usize).copied().unwrap_or(u64::MAX);
        let is_faulty = self.faulty.contains(&rank);
        let skew = mix_range(seed, &[K_SKEW, r], 0, MAX_SKEW_NS - 1);
        let straggle = |class: &Class| match self.straggler {
            Some((s, d)) if class.instance(s) == class.instance(rank) => d,
            _ => 0,
        };
        let own_delay = match self.straggler {
            Some((s, d)) if s == rank => d,
            _ => 0,
        };
        let t_len = self.template.len() as u64;
        let mut t_g = self.base_ns;
        for g in 0..self.total_ops.min(stop.saturating_add(1)) {
            if g > 0 {
                t_g += self.gap_after(g - 1);
            }
            let at_stop = g == stop;
            let mode = if at_stop && is_faulty { self.faulty_mode } else { Stuck::Waiting };
            if at_stop && mode == Stuck::NotIssued {
                break;
            }
            let mut op = &self.template[(g % t_len) as usize];
            if at_stop && matches!(mode, Stuck::Diverged | Stuck::Mismatched) {
                op = self.replacement.as_ref().unwrap_or(op);
            }
            let class = &self.classes[op.class];
            let c = op.class;
            // State of the op's completing entry (collective or end marker).
            let state = if at_stop {
                if mode == Stuck::NotStarted { State::Scheduled } else { State::Started }
            } else if g + 1 == self.total_ops {
                match self.spec.tail {
                    TailState::Completed => State::Completed,
                    TailState::Started => State::Started,
                    TailState::Scheduled => State::Scheduled,
                }
            } else {
                State::Completed
            };
            let created =
                t_g + skew + mix_range(seed, &[K_JITTER, r, g], 0, MAX_JITTER_NS - 1) + own_delay;
            let start = created + mix_range(seed, &[K_LAUNCH, r, g], 8_000, 20_000);
            let arrival = t_g + MAX_SKEW_NS + MAX_JITTER_NS + 20_000 + straggle(class);
            let end = arrival.max(start) + op.kernel_ns;
            let seen_start = start + mix_range(seed, &[K_POLL_START, r, g], 50_000, 2_000_000);
            let seen_end =
                end.max(seen_start) + mix_range(seed, &[K_POLL_END, r, g], 50_000, 2_000_000);
            let timed = |created: u64| -> (Option<f64>, Option<i64>, Option<i64>, bool) {
                match state {
                    State::Completed => (
                        // CUDA event times are f32 milliseconds.
                        Some(f64::from(((end - start) as f64 / 1e6) as f32)),
                        Some(seen_start.max(created) as i64),
                        Some(seen_end.max(created) as i64),
                        true,
                    ),
                    State::Started => (None, Some(seen_start.max(created) as i64), None, false),
                    State::Scheduled => (None, None, None, false),
                }
            };
            if op.kind == OpKind::P2p {
                p2p[c] += 1;
                let local = rc[c].local;
                let mut sub = 0u64;
                let mut p2p_entry =
                    |name: &str, op_id: u64, sub: u64, visit: &mut dyn FnMut(&Entry<'_>)| {
                        // Ops inside a batch have no CUDA events: they stay
                        // "scheduled" and are never retired.
                        visit(&Entry {
                            record_id,
                            class: c,
                            collective_seq_id: seq[c],
                            p2p_seq_id: p2p[c],
                            op_id,
                            profiling_name: name,
                            time_created_ns: (created + sub * 4_000) as i64,
                            duration_ms: None,
                            in_sizes: &op.in_sizes,
                            out_sizes: &op.out_sizes,
                            dtypes: &op.dtypes,
                            state: State::Scheduled,
                            started_ns: None,
                            completed_ns: None,
                            retired: false,
                            is_p2p: true,
                            callsite: op.callsite,
                        });
                        record_id += 1;
                    };
                if local > 0 {
                    op_id[c] += 1;
                    p2p_entry(&rc[c].recv_name, op_id[c], sub, &mut visit);
                    sub += 1;
                }
                if local + 1 < class.size {
                    op_id[c] += 1;
                    p2p_entry(&rc[c].send_name, op_id[c], sub, &mut visit);
                    sub += 1;
                }
                let marker_created = created + sub * 4_000;
                let (duration_ms, started_ns, completed_ns, retired) = timed(marker_created);
                visit(&Entry {
                    record_id,
                    class: c,
                    collective_seq_id: seq[c],
                    p2p_seq_id: p2p[c],
                    op_id: op_id[c],
                    profiling_name: &op.profiling_name,
                    time_created_ns: marker_created as i64,
                    duration_ms,
                    in_sizes: &[],
                    out_sizes: &[],
                    dtypes: &[],
                    state,
                    started_ns,
                    completed_ns,
                    retired,
                    is_p2p: true,
                    callsite: op.callsite,
                });
                record_id += 1;
            } else {
                seq[c] += 1;
                op_id[c] += 1;
                let (duration_ms, started_ns, completed_ns, retired) = timed(created);
                visit(&Entry {
                    record_id,
                    class: c,
                    collective_seq_id: seq[c],
                    p2p_seq_id: p2p[c],
                    op_id: op_id[c],
                    profiling_name: &op.profiling_name,
                    time_created_ns: created as i64,
                    duration_ms,
                    in_sizes: &op.in_sizes,
                    out_sizes: &op.out_sizes,
                    dtypes: &op.dtypes,
                    state,
                    started_ns,
                    completed_ns,
                    retired,
                    is_p2p: false,
                    callsite: op.callsite,
                });
                record_id += 1;
                let s = seq[c] as i64;
                let st = &mut status[c];
                st.enqueued = s;
                if state != State::Scheduled {
                    st.started = s;
                }
                if state == State::Completed {
                    st.completed = s;
                }
            }
        }
        status
    }
}
