//! Stage 2: per process group, line up every member's collectives by `collective_seq_id`.
//!
//! Ranks whose streams are identical (same tokens in the common window, same progress)
//! collapse into one [`StreamClass`], so thousands of ranks cost as much as the few ways they
//! behave. Mismatches are found between classes, and the side most ranks are on is the
//! reference: torchfrtrace instead compares everyone to whichever file loaded first.

mod by_group;
mod p2p;
mod signature;

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHasher};

use crate::model::{Entry, OpKind, ProcessGroup, RankDump, RankSet, State, Trace};

pub use p2p::{P2pMismatch, P2pProblem};
pub use signature::{Difference, Token, difference, numel, token as token_of};

#[derive(Debug)]
pub struct Alignment {
    pub groups: Vec<GroupAlignment>,
}

/// One process group across its members.
#[derive(Debug)]
pub struct GroupAlignment {
    /// Index into `Trace::process_groups`.
    pub pg: usize,
    pub members: Vec<u32>,
    /// Members without a readable dump.
    pub absent: Vec<u32>,
    pub streams: Vec<RankStream>,
    /// First sequence id every member with entries still holds (ring buffers drop old ones).
    pub window_start: u64,
    pub classes: Vec<StreamClass>,
    /// Every sequence id some member holds in the window, ascending. Iterating these rather
    /// than a range keeps a corrupt seq id (2^31 after a bit flip) from costing 2^31 steps.
    pub seqs: Vec<u64>,
    pub mismatches: Vec<Mismatch>,
    pub p2p_mismatches: Vec<P2pMismatch>,
}

/// One member's collectives in this group, as indices into its dump's entries.
#[derive(Debug)]
pub struct RankStream {
    pub rank: u32,
    /// Non-p2p entries sorted by (seq, `record_id`); coalesced ops share a seq.
    pub entries: Vec<u32>,
    pub progress: Progress,
}

/// Last sequence ids a rank reached in a group (from entries, and from `pg_status`, which
/// survives ring-buffer eviction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Progress {
    pub last_enqueued: Option<u64>,
    pub last_started: Option<u64>,
    pub last_completed: Option<u64>,
}

/// Ranks that behaved identically in one group.
#[derive(Debug, Clone)]
pub struct StreamClass {
    pub ranks: RankSet,
    pub progress: Progress,
    /// Index into `GroupAlignment::streams` of one member, for its entries.
    pub representative: usize,
    /// (seq, token) for every seq from the window on that the class holds, ascending.
    tokens: Vec<(u64, Token)>,
}

impl StreamClass {
    /// The class's token at `seq`; `None` when it has not issued (or no longer holds) it.
    pub fn token(&self, seq: u64) -> Option<Token> {
        self.tokens.binary_search_by_key(&seq, |(s, _)| *s).ok().map(|i| self.tokens[i].1)
    }

    /// Tokens at seqs in `[from, to)`, in order.
    pub fn tokens_between(&self, from: u64, to: u64) -> Vec<Token> {
        let start = self.tokens.partition_point(|(s, _)| *s < from);
        self.tokens[start..].iter().take_while(|(s, _)| *s < to).map(|(_, t)| *t).collect()
    }

    pub fn last_seq(&self) -> u64 {
        self.progress.last_enqueued.unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// Different operations at the same sequence id.
    Op,
    /// Same op, incompatible sizes.
    Size,
    /// Same op and sizes, different dtypes.
    Dtype,
    /// `all_to_all` whose total input and output element counts differ.
    Numel,
    /// Some members never issued this collective.
    Missing,
    /// Everyone issued it compatibly but it completed on some ranks only (NCCL states).
    State,
    /// Compatible collectives reached from different code: where ranks parted before a
    /// later conflict (set by the diagnosis, never found by the alignment itself).
    CallPath,
}

impl MismatchKind {
    /// The word used in reports (and in the JSON, by serde's `snake_case`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Op => "op",
            Self::Size => "size",
            Self::Dtype => "dtype",
            Self::Numel => "numel",
            Self::Missing => "missing",
            Self::State => "state",
            Self::CallPath => "call_path",
        }
    }
}

impl From<Difference> for MismatchKind {
    fn from(d: Difference) -> Self {
        match d {
            Difference::Op => Self::Op,
            Difference::Size => Self::Size,
            Difference::Dtype => Self::Dtype,
        }
    }
}

/// Ranks disagreeing at one sequence id of one group.
#[derive(Debug, Clone)]
pub struct Mismatch {
    pub pg: usize,
    pub seq: u64,
    pub kind: MismatchKind,
    /// Largest side first; the first side is the reference.
    pub sides: Vec<Side>,
}

#[derive(Debug, Clone)]
pub struct Side {
    pub ranks: RankSet,
    /// A rank of this side that holds the entry (`None` when the side did not issue it).
    pub holder: Option<u32>,
    pub state: Option<State>,
}

pub fn align(trace: &Trace) -> Alignment {
    let by_group::ByGroup { groups: held, status_of, windows } = by_group::ByGroup::new(trace);
    let groups = trace
        .process_groups
        .par_iter()
        .enumerate()
        .zip(held.into_par_iter())
        .map(|((i, pg), held)| align_group(trace, i, pg, held, &status_of, &windows))
        .collect();
    Alignment { groups }
}

impl GroupAlignment {
    pub fn stream(&self, rank: u32) -> Option<&RankStream> {
        self.streams.binary_search_by_key(&rank, |s| s.rank).ok().map(|i| &self.streams[i])
    }

    /// The entries `rank` holds at `seq` in this group (several for a coalesced group).
    pub fn entries_at<'t>(&self, trace: &'t Trace, rank: u32, seq: u64) -> Vec<&'t Entry> {
        let (Some(stream), Some(dump)) = (self.stream(rank), trace.rank(rank)) else {
            return Vec::new();
        };
        entries_at(dump, &stream.entries, seq)
    }

    /// The first (or only) entry `rank` holds at `seq`, without allocating: for the loops
    /// that visit every rank at every seq.
    pub fn first_at<'t>(&self, trace: &'t Trace, rank: u32, seq: u64) -> Option<&'t Entry> {
        self.run_at(trace, rank, seq).map(|(dump, run)| &dump.entries[run[0] as usize])
    }

    /// The last entry `rank` holds at `seq` (a coalesced group's end marker), without allocating.
    pub fn last_at<'t>(&self, trace: &'t Trace, rank: u32, seq: u64) -> Option<&'t Entry> {
        self.run_at(trace, rank, seq).map(|(dump, run)| &dump.entries[run[run.len() - 1] as usize])
    }

    /// The non-empty run of entry indices `rank` holds at `seq`.
    fn run_at<'t, 's>(
        &'s self,
        trace: &'t Trace,
        rank: u32,
        seq: u64,
    ) -> Option<(&'t RankDump, &'s [u32])> {
        run_in(trace, self.stream(rank)?, seq)
    }

    /// The class holding `rank`.
    pub fn class_of(&self, rank: u32) -> Option<&StreamClass> {
        self.classes.iter().find(|c| c.ranks.contains(rank))
    }

    pub fn max_seq(&self) -> u64 {
        self.classes.iter().map(StreamClass::last_seq).max().unwrap_or(0)
    }
}

/// The non-empty run of entry indices `stream` holds at `seq`, with the dump they index.
fn run_in<'t, 's>(
    trace: &'t Trace,
    stream: &'s RankStream,
    seq: u64,
) -> Option<(&'t RankDump, &'s [u32])> {
    let dump = trace.rank(stream.rank)?;
    let seq_of = |i: u32| dump.entries[i as usize].collective_seq_id;
    let start = stream.entries.partition_point(|&i| seq_of(i) < seq);
    let len = stream.entries[start..].iter().take_while(|&&i| seq_of(i) == seq).count();
    (len > 0).then(|| (dump, &stream.entries[start..start + len]))
}

fn entries_at<'t>(dump: &'t RankDump, indices: &[u32], seq: u64) -> Vec<&'t Entry> {
    let start = indices.partition_point(|&i| dump.entries[i as usize].collective_seq_id < seq);
    indices[start..]
        .iter()
        .map(|&i| &dump.entries[i as usize])
        .take_while(|e| e.collective_seq_id == seq)
        .collect()
}

fn align_group(
    trace: &Trace,
    pg_index: usize,
    pg: &ProcessGroup,
    mut held: Vec<by_group::Held>,
    status_of: &[by_group::StatusIndex],
    windows: &[by_group::Window],
) -> GroupAlignment {
    // Only a member without entries needs the group's agreed pg_id: a pass over the entries
    // of the group, skipped on the common path where each member holds some.
    let holds_no_collective = |rank: u32| match held.binary_search_by_key(&rank, |h| h.rank) {
        Ok(j) => held[j].collectives.is_empty(),
        Err(_) => true,
    };
    let agreed = if pg.members.iter().any(|&r| trace.rank(r).is_some() && holds_no_collective(r)) {
        agreed_pg_id(trace, pg, &held)
    } else {
        None
    };
    let mut streams: Vec<RankStream> = Vec::new();
    for &rank in &pg.members {
        let Ok(at) = trace.ranks.binary_search_by_key(&rank, |d| d.rank) else { continue };
        let entries = match held.binary_search_by_key(&rank, |h| h.rank) {
            Ok(j) => std::mem::take(&mut held[j].collectives),
            Err(_) => Vec::new(),
        };
        streams.push(stream(&trace.ranks[at], entries, &status_of[at], agreed));
    }
    let absent = pg.members.iter().copied().filter(|&r| trace.rank(r).is_none()).collect();
    let window_start = streams
        .iter()
        .filter_map(|s| {
            s.entries
                .first()
                .map(|&i| trace.rank(s.rank).map_or(0, |d| d.entries[i as usize].collective_seq_id))
        })
        .max()
        .unwrap_or(1);
    let classes = classes(trace, &streams, window_start);
    let mut seqs: Vec<u64> =
        classes.iter().flat_map(|c| c.tokens.iter().map(|(s, _)| *s)).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let mut group = GroupAlignment {
        pg: pg_index,
        members: pg.members.clone(),
        absent,
        streams,
        window_start,
        classes,
        seqs,
        mismatches: Vec::new(),
        p2p_mismatches: Vec::new(),
    };
    group.mismatches = mismatches(trace, &group);
    group.p2p_mismatches = p2p::align_p2p(trace, &group, pg, &held, windows);
    group
}

/// The process-local `pg_id` every entry of `pg` carries, on whichever rank, when they all
/// carry the same one. `pg_status` is keyed by that id; a rank that holds no entry of the
/// group (a recorder asked for active entries only, between two collectives; or a ring
/// buffer that has dropped them all) can only be tied to its status through it.
fn agreed_pg_id(trace: &Trace, pg: &ProcessGroup, held: &[by_group::Held]) -> Option<i64> {
    let mut ids = held
        .iter()
        .filter(|h| pg.members.binary_search(&h.rank).is_ok())
        .filter_map(|h| trace.rank(h.rank).map(|d| (d, h)))
        .flat_map(|(d, h)| {
            h.collectives.iter().chain(&h.p2p).map(|&i| d.entries[i as usize].pg_id())
        });
    let first = ids.next()?;
    ids.all(|id| id == first).then_some(first)
}

/// One member's stream: its collective entries of the group (indices, in file order), ordered
/// by seq, with its progress from them and from its `pg_status`.
fn stream(
    dump: &RankDump,
    mut entries: Vec<u32>,
    status_of: &by_group::StatusIndex,
    agreed_pg_id: Option<i64>,
) -> RankStream {
    entries.sort_by_key(|&i| {
        let e = &dump.entries[i as usize];
        (e.collective_seq_id, e.record_id)
    });
    let mut progress = Progress::default();
    for &i in &entries {
        let e = &dump.entries[i as usize];
        let seq = Some(e.collective_seq_id);
        progress.last_enqueued = progress.last_enqueued.max(seq);
        if matches!(e.state, State::Started | State::Completed) {
            progress.last_started = progress.last_started.max(seq);
        }
        if e.state == State::Completed {
            progress.last_completed = progress.last_completed.max(seq);
        }
    }
    // pg_status is keyed by the process-local pg_id; any entry of this group tells it.
    let pg_id = entries.first().map(|&i| dump.entries[i as usize].pg_id()).or(agreed_pg_id);
    if let Some(status) = pg_id.and_then(|id| status_of.get(&id)).map(|&i| &dump.pg_status[i]) {
        progress.last_enqueued = progress.last_enqueued.max(status.last_enqueued);
        progress.last_started = progress.last_started.max(status.last_started);
        progress.last_completed = progress.last_completed.max(status.last_completed);
    }
    RankStream { rank: dump.rank, entries, progress }
}

fn classes(trace: &Trace, streams: &[RankStream], window_start: u64) -> Vec<StreamClass> {
    // Each rank's tokens are hashed where they are made, in a buffer per thread; only a
    // class's first rank keeps its tokens (made again below). Keeping every rank's tokens
    // until all were hashed held 32 bytes per collective of every rank at once, a fifth of
    // the peak memory at 512 ranks.
    let hashes: Vec<u64> = streams
        .par_iter()
        .map_init(
            || (FxHashMap::<usize, Token>::default(), Vec::new()),
            |(known, tokens), s| {
                stream_tokens(trace, s, window_start, known, tokens);
                let mut h = FxHasher::default();
                tokens.hash(&mut h);
                h.finish()
            },
        )
        .collect();
    let mut by_key: FxHashMap<(u64, Progress), usize> = FxHashMap::default();
    let mut classes: Vec<StreamClass> = Vec::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    for (i, (s, hash)) in streams.iter().zip(hashes).enumerate() {
        let key = (hash, s.progress);
        let slot = *by_key.entry(key).or_insert_with(|| {
            let mut tokens = Vec::new();
            stream_tokens(trace, s, window_start, &mut FxHashMap::default(), &mut tokens);
            classes.push(StreamClass {
                ranks: RankSet::default(),
                progress: s.progress,
                representative: i,
                tokens,
            });
            members.push(Vec::new());
            classes.len() - 1
        });
        members[slot].push(s.rank);
    }
    for (class, ranks) in classes.iter_mut().zip(members) {
        class.ranks = RankSet::new(ranks);
    }
    classes.sort_by(|a, b| b.ranks.len().cmp(&a.ranks.len()).then(a.ranks.cmp(&b.ranks)));
    classes
}

/// A stream's tokens, one per collective seq from `window_start` on, into `tokens` (cleared
/// first). A lone entry's token depends on its call alone, and calls are shared by every rank
/// of the load (load/intern.rs): `known` keeps it per call for the thread. Hashing every frame
/// of every entry's call path was a fifth of the CPU at 2,048 ranks.
fn stream_tokens(
    trace: &Trace,
    s: &RankStream,
    window_start: u64,
    known: &mut FxHashMap<usize, Token>,
    tokens: &mut Vec<(u64, Token)>,
) {
    tokens.clear();
    let Some(dump) = trace.rank(s.rank) else { return };
    let entries: Vec<&Entry> = s.entries.iter().map(|&i| &dump.entries[i as usize]).collect();
    tokens.extend(
        entries
            .chunk_by(|a, b| a.collective_seq_id == b.collective_seq_id)
            .filter(|run| run[0].collective_seq_id >= window_start)
            .map(|run| {
                let token = match run {
                    [one] => *known
                        .entry(Arc::as_ptr(&one.call) as usize)
                        .or_insert_with(|| signature::token(run)),
                    _ => signature::token(run),
                };
                (run[0].collective_seq_id, token)
            }),
    );
}

/// Every sequence id where classes disagree: different tokens, or some never issued it.
fn mismatches(trace: &Trace, group: &GroupAlignment) -> Vec<Mismatch> {
    group.seqs.iter().filter_map(|&seq| mismatch_at(trace, group, seq)).collect()
}

fn mismatch_at(trace: &Trace, group: &GroupAlignment, seq: u64) -> Option<Mismatch> {
    // Partition classes by their signature at this seq (call sites may differ legitimately).
    let mut sides: Vec<(Option<u64>, Vec<u32>, Option<u32>)> = Vec::new();
    for class in &group.classes {
        let sig = class.token(seq).map(|t| t.sig);
        let holder = sig.map(|_| group.streams[class.representative].rank);
        match sides.iter_mut().find(|(s, _, _)| *s == sig) {
            Some(side) => side.1.extend_from_slice(class.ranks.as_slice()),
            None => sides.push((sig, class.ranks.as_slice().to_vec(), holder)),
        }
    }
    let missing_absent = !group.absent.is_empty();
    if sides.len() == 1 && !missing_absent {
        return state_mismatch(trace, group, seq).or_else(|| numel_mismatch(trace, group, seq));
    }
    sides.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.is_none().cmp(&b.0.is_none())));
    let issued: Vec<_> = sides.iter().filter(|s| s.0.is_some()).collect();
    if issued.is_empty() {
        return None;
    }
    let reference = group.entries_at(trace, issued[0].2?, seq);
    let kind = issued[1..]
        .iter()
        .filter_map(|side| difference(&reference, &group.entries_at(trace, side.2?, seq)))
        .min()
        .map_or(MismatchKind::Missing, MismatchKind::from);
    let mut out: Vec<Side> = sides
        .into_iter()
        .map(|(_, ranks, holder)| {
            let state = holder.and_then(|h| group.last_at(trace, h, seq).map(|e| e.state));
            Side { ranks: RankSet::new(ranks), holder, state }
        })
        .collect();
    if missing_absent {
        out.push(Side { ranks: RankSet::new(group.absent.clone()), holder: None, state: None });
    }
    Some(Mismatch { pg: group.pg, seq, kind, sides: out })
}

/// NCCL only: all issued the same collective, but it completed on some ranks and not others.
fn state_mismatch(trace: &Trace, group: &GroupAlignment, seq: u64) -> Option<Mismatch> {
    let mut by_state: Vec<(State, Vec<u32>, u32)> = Vec::new();
    for class in &group.classes {
        let rank = group.streams[class.representative].rank;
        let state = group.last_at(trace, rank, seq)?.state;
        match by_state.iter_mut().find(|(s, _, _)| *s == state) {
            Some(side) => side.1.extend_from_slice(class.ranks.as_slice()),
            None => by_state.push((state, class.ranks.as_slice().to_vec(), rank)),
        }
    }
    if by_state.len() < 2 {
        return None;
    }
    by_state.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(b.0.cmp(&a.0)));
    let sides = by_state
        .into_iter()
        .map(|(state, ranks, holder)| Side {
            ranks: RankSet::new(ranks),
            holder: Some(holder),
            state: Some(state),
        })
        .collect();
    Some(Mismatch { pg: group.pg, seq, kind: MismatchKind::State, sides })
}

/// `all_to_all` may split unevenly per rank, but what all ranks send must equal what they receive.
fn numel_mismatch(trace: &Trace, group: &GroupAlignment, seq: u64) -> Option<Mismatch> {
    let first = group.classes.first()?;
    let rep = group.entries_at(trace, group.streams[first.representative].rank, seq);
    if rep.first()?.op().kind != OpKind::AllToAll {
        return None;
    }
    let (mut sent, mut received) = (0i64, 0i64);
    // Every member at every all_to_all seq: no Vec and no stream lookup per rank here.
    for (dump, run) in group.streams.iter().filter_map(|s| run_in(trace, s, seq)) {
        for e in run.iter().map(|&i| &dump.entries[i as usize]) {
            sent += numel(e.input_sizes());
            received += numel(e.output_sizes());
        }
    }
    (sent != received).then(|| Mismatch {
        pg: group.pg,
        seq,
        kind: MismatchKind::Numel,
        sides: vec![Side {
            ranks: group.members.iter().copied().collect(),
            holder: Some(group.streams[first.representative].rank),
            state: None,
        }],
    })
}
