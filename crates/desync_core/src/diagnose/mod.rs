//! Stage 3: from aligned streams to a verdict. Ranks are clustered by where they are, the
//! earliest conflicting collective is found across groups, waits are followed, and the
//! evidence is classified into exactly one of the brief's categories, with the ranks that
//! departed from what their peers did.

mod all_clear;
mod earliest;
mod position;
mod timing;
mod waits;

use rustc_hash::FxHashMap;

use crate::align::{Alignment, Token};
use crate::model::{Membership, RankSet, State, Trace};

pub use all_clear::DoubtKind;
pub use earliest::{Departure, Earliest, Symptom, is_conflict};
pub use position::{At, Position};
pub use timing::{IntervalEnd, SiteRef, SlowInterval, Straggler};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Divergence,
    MetadataMismatch,
    Stall,
    GpuHang,
    Deadlock,
    Crash,
    Straggler,
    Healthy,
    Inconclusive,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Divergence => "divergence",
            Self::MetadataMismatch => "metadata_mismatch",
            Self::Stall => "stall",
            Self::GpuHang => "gpu_hang",
            Self::Deadlock => "deadlock",
            Self::Crash => "crash",
            Self::Straggler => "straggler",
            Self::Healthy => "healthy",
            Self::Inconclusive => "inconclusive",
        }
    }

    pub fn is_problem(self) -> bool {
        self != Self::Healthy
    }
}

/// Ranks that are in the same place doing the same thing.
#[derive(Debug, Clone)]
pub struct BehaviourGroup {
    pub ranks: RankSet,
    pub position: Position,
    /// Members of the group's current collective that have not issued it.
    pub waiting_for: RankSet,
    pub stuck: bool,
    pub culprit: bool,
}

impl BehaviourGroup {
    /// The seq of the collective the group sits in, if it sits in one.
    fn position_seq(&self) -> Option<u64> {
        match &self.position {
            Position::At(at) => Some(at.seq),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub category: Category,
    pub culprit_ranks: RankSet,
    /// Index into `Trace::process_groups`.
    pub process_group: Option<usize>,
    pub collective_seq_id: Option<u64>,
    pub headline: String,
    /// The facts behind the verdict, in the order they were used.
    pub evidence: Vec<String>,
    pub groups: Vec<BehaviourGroup>,
    pub earliest: Option<Earliest>,
    /// Where most stuck ranks wait: (group index, seq).
    pub stuck_at: Option<(usize, u64)>,
    /// Behaviour groups forming a wait cycle, in order.
    pub cycle: Option<Vec<usize>>,
    pub straggler: Option<Straggler>,
    /// For an `inconclusive` verdict on a set that would otherwise read healthy: the gap in
    /// the records it rests on (`diagnose/all_clear.rs`).
    pub doubt: Option<DoubtKind>,
    /// For a stall in a send or recv: the op the culprit did not post ("recv", "send").
    pub missing_p2p: Option<&'static str>,
    /// A divergence read from a stall whose culprits the log shows ended, not stuck
    /// (`logs/ended.rs`): the bridge looks for the jump that made them issue fewer collectives.
    pub ended_short: bool,
}

pub fn diagnose(trace: &Trace, alignment: &Alignment) -> Diagnosis {
    let groups = behaviour_groups(trace, alignment);
    let earliest = earliest::earliest(trace, alignment);
    let waits: Vec<waits::Wait> = groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.stuck)
        .filter_map(|(i, g)| match &g.position {
            Position::At(at) => Some(waits::Wait {
                group: i,
                pg: at.pg,
                seq: at.seq,
                waiting_for: g.waiting_for.clone(),
            }),
            _ => None,
        })
        .collect();
    let rank_group: FxHashMap<u32, usize> = groups
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.ranks.as_slice().iter().map(move |&r| (r, i)))
        .collect();
    let cycle = waits::find_cycle(&waits, &|r| rank_group.get(&r).copied(), groups.len());
    let stuck_at = waits
        .iter()
        .max_by_key(|w| (groups[w.group].ranks.len(), std::cmp::Reverse(w.pg)))
        .map(|w| (w.pg, w.seq));
    let mut d = Diagnosis {
        category: Category::Inconclusive,
        culprit_ranks: RankSet::default(),
        process_group: None,
        collective_seq_id: None,
        headline: String::new(),
        evidence: Vec::new(),
        groups,
        earliest,
        stuck_at,
        cycle,
        straggler: None,
        doubt: None,
        missing_p2p: None,
        ended_short: false,
    };
    classify(trace, alignment, &mut d);
    for g in &mut d.groups {
        g.culprit = g.ranks.as_slice().iter().any(|&r| d.culprit_ranks.contains(r));
    }
    d
}

#[derive(Hash, PartialEq, Eq)]
enum GroupKey {
    NoDump,
    Idle,
    At {
        pg: usize,
        seq: u64,
        token: Token,
        completed: Option<bool>,
        state: State,
        waiting_for: Vec<u32>,
    },
}

/// Whether any entry carries NCCL-style start/completion states (Gloo's stay "scheduled").
fn tracks_states(trace: &Trace) -> bool {
    trace.ranks.iter().flat_map(|r| &r.entries).any(|e| e.state != State::Scheduled)
}

fn behaviour_groups(trace: &Trace, alignment: &Alignment) -> Vec<BehaviourGroup> {
    let tracks_states = tracks_states(trace);
    let mut index: FxHashMap<GroupKey, usize> = FxHashMap::default();
    let mut groups: Vec<BehaviourGroup> = Vec::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    // Who a position waits for depends only on (group, seq): compute it once per position,
    // not once per rank (members x ranks would be quadratic at 16k ranks).
    let mut waits_cache: FxHashMap<(usize, u64), RankSet> = FxHashMap::default();
    for (rank, position) in position::positions(trace, alignment) {
        let waiting_for = match &position {
            Position::At(at) => waits_cache
                .entry((at.pg, at.seq))
                .or_insert_with(|| waits::waiting_for(trace, alignment, at))
                .clone(),
            _ => RankSet::default(),
        };
        let key = match &position {
            Position::NoDump => GroupKey::NoDump,
            Position::Idle => GroupKey::Idle,
            Position::At(at) => GroupKey::At {
                pg: at.pg,
                seq: at.seq,
                token: at.token,
                completed: at.completed,
                state: at.state,
                waiting_for: waiting_for.as_slice().to_vec(),
            },
        };
        let slot = *index.entry(key).or_insert_with(|| {
            let stuck = waits::is_stuck(&position, &waiting_for, tracks_states);
            groups.push(BehaviourGroup {
                ranks: RankSet::default(),
                position,
                waiting_for,
                stuck,
                culprit: false,
            });
            members.push(Vec::new());
            groups.len() - 1
        });
        members[slot].push(rank);
    }
    for (g, m) in groups.iter_mut().zip(members) {
        g.ranks = RankSet::new(m);
    }
    groups.sort_by(|a, b| b.ranks.len().cmp(&a.ranks.len()).then(a.ranks.cmp(&b.ranks)));
    groups
}

fn classify(trace: &Trace, alignment: &Alignment, d: &mut Diagnosis) {
    let pg_label = |i: usize| trace.process_groups[i].label();
    if trace.ranks.iter().all(|r| r.entries.is_empty()) {
        d.category = Category::Inconclusive;
        d.headline =
            "no dump holds any collective: nothing to compare (was TORCH_FR_BUFFER_SIZE set?)"
                .into();
        return;
    }
    let stuck: RankSet =
        d.groups.iter().filter(|g| g.stuck).flat_map(|g| g.ranks.as_slice().to_vec()).collect();
    let waited_for: RankSet = d
        .groups
        .iter()
        .filter(|g| g.stuck)
        .flat_map(|g| g.waiting_for.as_slice().to_vec())
        .collect();
    let no_dump: RankSet = trace.missing_ranks.iter().copied().collect();
    if !no_dump.is_empty() {
        d.evidence.push(format!("rank(s) {no_dump} left no readable dump"));
    }

    // A crash outranks a conflict only when the conflict cannot explain the wait.
    let crashed: RankSet =
        waited_for.as_slice().iter().copied().filter(|r| no_dump.contains(*r)).collect();
    if !crashed.is_empty() && d.earliest.is_none() {
        return crash(trace, d, &crashed, &stuck);
    }
    if let Some(e) = d.earliest.clone() {
        return conflict(trace, alignment, d, &e, &pg_label);
    }
    if let Some(cycle) = d.cycle.clone() {
        if let Some(pg) = assumed_group_in(trace, d, &cycle) {
            return unproven_cycle(trace, d, &cycle, pg);
        }
        // Sides whose collective the ranks they wait for never issued. When every side's is
        // new there is no order to compare against (two groups first used in opposite orders):
        // that stays a deadlock.
        let departed: Vec<usize> = cycle
            .iter()
            .copied()
            .filter(|&g| match &d.groups[g].position {
                Position::At(at) => {
                    waits::without_precedent(alignment, at, &d.groups[g].waiting_for)
                }
                _ => false,
            })
            .collect();
        if !departed.is_empty() && departed.len() < cycle.len() {
            return departed_in_cycle(trace, d, &cycle, &departed, &pg_label);
        }
        return deadlock(trace, d, &cycle, &pg_label);
    }
    if !waited_for.is_empty() {
        return stall(trace, d, &stuck, &waited_for, &pg_label);
    }
    if !stuck.is_empty() {
        return gpu_hang(trace, alignment, d, &stuck, &pg_label);
    }
    // No rank waits in a collective, but one may wait in a send or recv its peer went past.
    if let Some((pg, m)) = alignment
        .groups
        .iter()
        .find_map(|g| g.p2p_mismatches.iter().find(|m| m.pending).map(|m| (g.pg, m)))
    {
        return unmatched_p2p(d, pg, m, &pg_label);
    }
    let in_flight: RankSet = d
        .groups
        .iter()
        .filter(|g| matches!(&g.position, Position::At(at) if at.completed == Some(false)))
        .flat_map(|g| g.ranks.as_slice().to_vec())
        .collect();
    // Said with the all-clear or the straggler verdict only: a doubt below explains it instead.
    let in_flight_note = (!in_flight.is_empty()).then(|| format!(
        "rank(s) {in_flight} had their last collective in flight at dump time; every member issued it compatibly"
    ));
    if let Some(s) = timing::straggler(trace, alignment) {
        d.evidence.extend(in_flight_note);
        d.category = Category::Straggler;
        d.culprit_ranks = RankSet::new(vec![s.rank]);
        d.process_group = Some(s.pg);
        d.headline = format!(
            "no hang; rank {} was the last to enqueue in {} of {} collectives of {}, typically {:.1} ms after the next rank, causing {:.0}% of all waiting",
            s.rank,
            s.times_last,
            s.collectives,
            pg_label(s.pg),
            s.median_lead_ms,
            100.0 * s.share_of_waiting
        );
        if let Some(i) = &s.slow_interval {
            d.evidence.push(format!(
                "rank {} loses its time between {} and {} (latest: seq {} to {}): {:.1} ms more than its peers on average, {} time(s), {:.0}% of its extra time",
                s.rank,
                interval_end_text(&i.from),
                interval_end_text(&i.to),
                i.from.collective_seq_id,
                i.to.collective_seq_id,
                i.mean_extra_ms,
                i.occurrences,
                100.0 * i.share_of_extra
            ));
        }
        d.straggler = Some(s);
        return;
    }
    if !no_dump.is_empty() {
        d.category = Category::Inconclusive;
        d.culprit_ranks = no_dump.clone();
        d.headline = format!(
            "rank(s) {no_dump} have no dump, but no other rank waits for them and the rest agree"
        );
        return;
    }
    // Entries that could not be read may hold the very collective that differs: what was
    // read agrees, but that is no all-clear.
    let (skipped, ranks) = skipped_entries(trace);
    if skipped > 0 {
        d.category = Category::Inconclusive;
        d.headline = format!(
            "the entries that could be read agree, but {skipped} entr{} of rank(s) {} could not be read (see the warnings), so this is no all-clear",
            if skipped == 1 { "y" } else { "ies" },
            ranks.brief()
        );
        return;
    }
    if let Some(doubt) = all_clear::doubt(trace, alignment, &d.groups) {
        d.category = Category::Inconclusive;
        d.culprit_ranks = doubt.ranks;
        d.process_group = doubt.pg;
        d.collective_seq_id = doubt.seq;
        d.headline = doubt.headline;
        d.evidence.extend(doubt.evidence);
        d.doubt = Some(doubt.kind);
        return;
    }
    d.evidence.extend(in_flight_note);
    d.category = Category::Healthy;
    let collectives: usize = alignment.groups.iter().map(|g| g.seqs.len()).sum();
    let ranks = match trace.ranks.len() {
        1 => "the only rank completed".to_owned(),
        n => format!("all {n} ranks agree on"),
    };
    d.headline = format!(
        "{ranks} all {} collectives in {} process group(s); nothing is stuck",
        collectives,
        trace.process_groups.len()
    );
}

/// Entries skipped while loading (unreadable, past a limit), with the ranks they belong to.
fn skipped_entries(trace: &Trace) -> (usize, RankSet) {
    let count = trace.skipped_entries.iter().map(|(_, n)| n).sum();
    (count, trace.skipped_entries.iter().map(|(r, _)| *r).collect())
}

pub(crate) fn describe_wait(trace: &Trace, g: &BehaviourGroup) -> String {
    match &g.position {
        Position::At(at) => {
            format!("{} seq {} of {}", at.op, at.seq, trace.process_groups[at.pg].label())
        }
        Position::NoDump => "no dump".into(),
        Position::Idle => "nothing recorded".into(),
    }
}

fn crash(trace: &Trace, d: &mut Diagnosis, crashed: &RankSet, stuck: &RankSet) {
    d.category = Category::Crash;
    d.culprit_ranks = crashed.clone();
    if let Some((pg, seq)) = d.stuck_at {
        d.process_group = Some(pg);
        d.collective_seq_id = Some(seq);
    }
    let waiting =
        d.groups.iter().find(|g| g.stuck).map(|g| describe_wait(trace, g)).unwrap_or_default();
    let (crashed_text, stuck) = (crashed.brief(), stuck.brief());
    d.headline = format!(
        "rank(s) {crashed_text} left no readable dump and rank(s) {stuck} wait for them in {waiting}: the process likely died or was killed"
    );
    d.evidence.push(format!(
        "ranks {stuck} are stuck in a collective that rank(s) {crashed_text} never issued"
    ));
}

fn conflict(
    trace: &Trace,
    alignment: &Alignment,
    d: &mut Diagnosis,
    e: &Earliest,
    pg_label: &dyn Fn(usize) -> String,
) {
    let m = &e.mismatch;
    let group = &alignment.groups[m.pg];
    d.process_group = Some(m.pg);
    d.collective_seq_id = Some(m.seq);
    d.category =
        if e.departure.is_divergence() { Category::Divergence } else { Category::MetadataMismatch };
    let reference = &m.sides[e.reference];
    let departed_set: RankSet =
        e.departed.iter().flat_map(|&i| m.sides[i].ranks.as_slice().to_vec()).collect();
    d.culprit_ranks =
        if departed_set.is_empty() { reference.ranks.clone() } else { departed_set.clone() };
    // Sentences name rank sets briefly: a side of a world-sized job is thousands of ranges.
    let departed = departed_set.brief();
    let reference_ranks = reference.ranks.brief();
    let describe = |rank: Option<u32>| -> String {
        let Some(rank) = rank else { return "nothing".into() };
        let entries = group.entries_at(trace, rank, m.seq);
        let Some(first) = entries.first() else { return "nothing".into() };
        let site = first
            .call_site()
            .map(|f| format!(" from {}:{}", short_path(&f.file), f.line))
            .unwrap_or_default();
        let ops = if entries.len() > 1 {
            format!("{} ops coalesced, first ", entries.len())
        } else {
            String::new()
        };
        format!(
            "{ops}{} {} {}{site}",
            first.op().name,
            sizes_text(first.input_sizes()),
            dtypes_text(first.input_dtypes())
        )
    };
    let there = format!("{} seq {}", pg_label(m.pg), m.seq);
    let culprit_text = e.departed.first().map(|&i| describe(m.sides[i].holder)).unwrap_or_default();
    let reference_text = describe(reference.holder);
    if let Some(symptom) = e.symptom {
        // Each side's first frame (outermost in) that the other side's path does not share:
        // where the two paths part.
        let path_of = |rank: Option<u32>| -> Vec<crate::model::Frame> {
            let entries = rank.map(|r| group.entries_at(trace, r, m.seq)).unwrap_or_default();
            entries
                .first()
                .map(|x| x.call_path().iter().rev().cloned().collect())
                .unwrap_or_default()
        };
        let departed_path = path_of(e.departed.first().and_then(|&i| m.sides[i].holder));
        let reference_path = path_of(reference.holder);
        let common = departed_path.iter().zip(&reference_path).take_while(|(a, b)| a == b).count();
        // The user's call sites say it when they differ; otherwise the framework code where
        // the paths part (named by package and function: it is not the user's code).
        let parting = |p: &[crate::model::Frame]| -> String {
            if departed_path
                .iter()
                .filter(|f| !f.is_library())
                .ne(reference_path.iter().filter(|f| !f.is_library()))
            {
                return String::new();
            }
            p.get(common).or(p.last()).map_or_else(String::new, |f| {
                format!(" (through {} {}() line {})", f.package(), f.function, f.line)
            })
        };
        d.headline = format!(
            "rank(s) {departed} took a different path at {there}: they issued {}{}, while rank(s) {} issued {}{}",
            culprit_text.replace("  ", " "),
            parting(&departed_path),
            reference_ranks,
            reference_text.replace("  ", " "),
            parting(&reference_path)
        );
        d.evidence.push(format!(
            "the two sides' collectives kept matching in op, sizes and dtypes from seq {} on, from different code, until seq {} ({}): that conflict is a symptom of the earlier parting",
            m.seq,
            symptom.collective_seq_id,
            symptom.kind.as_str(),
        ));
    } else {
        d.headline = match e.departure {
            Departure::Inserted { count } => format!(
                "rank(s) {departed} issued {count} extra collective(s) at {there}: {culprit_text}, where rank(s) {reference_ranks} issued {reference_text}"
            ),
            Departure::Skipped { count } => format!(
                "rank(s) {departed} skipped {count} collective(s) at {there}: they issued {culprit_text} where rank(s) {reference_ranks} issued {reference_text}"
            ),
            Departure::DifferentOp | Departure::DifferentCallSite => format!(
                "rank(s) {departed} took a different path at {there}: they issued {culprit_text} while rank(s) {reference_ranks} issued {reference_text}"
            ),
            Departure::Substituted { difference } => format!(
                "rank(s) {departed} called the same collective with a different {} at {there}: {culprit_text} vs {reference_text} on rank(s) {}",
                match difference {
                    crate::align::Difference::Dtype => "dtype",
                    _ => "size",
                },
                reference_ranks
            ),
            Departure::Numel => {
                let (sent, received) = all_to_all_totals(trace, group, m.seq);
                format!(
                    "all_to_all at {there} sends {sent} and receives {received} elements in total across ranks: the split sizes disagree between some ranks (Flight Recorder records each rank's totals, not its split sizes)"
                )
            }
            Departure::BrokePattern => format!(
                "rank(s) {departed} issued a collective that breaks the pattern all ranks followed, at {there}: {culprit_text}, never issued before, where rank(s) {reference_ranks} continued with {reference_text} (an extra or missing call; the dumps carry no frames to show the line)"
            ),
        };
    }
    d.evidence.push(if e.departure == Departure::Numel {
        e.reference_reason.to_owned()
    } else {
        format!("rank(s) {} are taken as the normal path: {}", reference_ranks, e.reference_reason)
    });
    if e.departure == Departure::Numel
        && let Some((stopped, at, went_on)) = stopped_in_non_conserving(d, group, m)
    {
        d.culprit_ranks = stopped.clone();
        d.evidence.push(format!(
            "rank(s) {stopped} stopped in the all_to_all at {} seq {at}, whose totals do not add up either, while rank(s) {went_on} went past it: the exchange did not complete on rank(s) {stopped}, which are one side of the splits that disagree (which peer is the other side, the dumps cannot say)",
            pg_label(m.pg)
        ));
    }
    let later = group.mismatches.iter().filter(|x| x.seq > m.seq).count();
    if later > 0 {
        d.evidence
            .push(format!("{later} later mismatch(es) in {} follow from this one", pg_label(m.pg)));
    }
    if let Some((pg, seq)) = d.stuck_at
        && (pg, seq) != (m.pg, m.seq)
    {
        d.evidence.push(format!(
            "the job is stuck later, at {} seq {seq}: not where it went wrong",
            pg_label(pg)
        ));
    }
}

/// Elements sent and received over every member's entries of the `all_to_all` at `seq`.
fn all_to_all_totals(trace: &Trace, group: &crate::align::GroupAlignment, seq: u64) -> (i64, i64) {
    let elements =
        |sizes: &[Vec<i64>]| -> i64 { sizes.iter().map(|s| s.iter().product::<i64>()).sum() };
    let (mut sent, mut received) = (0, 0);
    for &rank in &group.members {
        for e in group.entries_at(trace, rank, seq) {
            sent += elements(e.input_sizes());
            received += elements(e.output_sizes());
        }
    }
    (sent, received)
}

/// An `all_to_all` whose totals do not add up names no rank: Flight Recorder keeps the totals,
/// not the splits. What the dumps do show is where each rank stopped: the ranks whose last
/// collective in the group is one of these non-conserving exchanges (at `m` or later), while
/// the others went past it, are where the exchange did not complete (Gloo aborts a receive of
/// another size than posted; NCCL waits on it). Returns them, that seq, and the others; `None`
/// when every rank stopped alike.
fn stopped_in_non_conserving(
    d: &Diagnosis,
    group: &crate::align::GroupAlignment,
    m: &crate::align::Mismatch,
) -> Option<(RankSet, u64, RankSet)> {
    let non_conserving = |seq: u64| {
        group.mismatches.iter().any(|x| x.seq == seq && x.kind == crate::align::MismatchKind::Numel)
    };
    let in_group = |g: &&BehaviourGroup| {
        matches!(&g.position, Position::At(at) if at.pg == m.pg)
            && g.ranks.as_slice().iter().all(|r| group.members.contains(r))
    };
    let positioned: Vec<&BehaviourGroup> = d.groups.iter().filter(in_group).collect();
    let latest = positioned.iter().filter_map(|g| g.position_seq()).max()?;
    let stopped: Vec<&BehaviourGroup> = positioned
        .iter()
        .copied()
        .filter(|g| g.position_seq().is_some_and(|s| s >= m.seq && s < latest && non_conserving(s)))
        .collect();
    let at = stopped.iter().filter_map(|g| g.position_seq()).min()?;
    let stopped_ranks: RankSet = stopped.iter().flat_map(|g| g.ranks.as_slice().to_vec()).collect();
    let went_on: RankSet = positioned
        .iter()
        .filter(|g| g.position_seq().is_some_and(|s| s > at))
        .flat_map(|g| g.ranks.as_slice().to_vec())
        .collect();
    // Every member accounted for: a rank without a dump could have stopped anywhere.
    let known = stopped_ranks.len() + went_on.len();
    (known == group.members.len() && !went_on.is_empty()).then_some((stopped_ranks, at, went_on))
}

fn deadlock(trace: &Trace, d: &mut Diagnosis, cycle: &[usize], pg_label: &dyn Fn(usize) -> String) {
    d.category = Category::Deadlock;
    let parts: Vec<String> = cycle
        .iter()
        .map(|&g| {
            let group = &d.groups[g];
            match &group.position {
                Position::At(at) => format!(
                    "rank(s) {} wait in {} seq {} of {} for rank(s) {}",
                    group.ranks,
                    at.op,
                    at.seq,
                    pg_label(at.pg),
                    group.waiting_for
                ),
                _ => format!("rank(s) {}", group.ranks),
            }
        })
        .collect();
    // One side of the inversion: the ranks whose current group breaks the order of groups
    // they followed before; failing that, the group waiting in the later-created group.
    let departed: Vec<usize> =
        cycle.iter().copied().filter(|&g| breaks_group_order(trace, &d.groups[g])).collect();
    let culprit_groups = if departed.is_empty() || departed.len() == cycle.len() {
        let latest = cycle
            .iter()
            .copied()
            .max_by_key(|&g| match &d.groups[g].position {
                Position::At(at) => (at.pg, std::cmp::Reverse(d.groups[g].ranks.clone())),
                _ => (0, std::cmp::Reverse(RankSet::default())),
            })
            .unwrap_or(cycle[0]);
        vec![latest]
    } else {
        d.evidence
            .push("the culprit side switched the order in which it uses the process groups".into());
        departed
    };
    let culprit = culprit_groups[0];
    d.culprit_ranks =
        culprit_groups.iter().flat_map(|&g| d.groups[g].ranks.as_slice().to_vec()).collect();
    if let Position::At(at) = &d.groups[culprit].position {
        d.process_group = Some(at.pg);
        d.collective_seq_id = Some(at.seq);
    }
    d.headline = format!("wait cycle across process groups: {}", parts.join("; "));
    d.evidence.push("each side waits for a collective the other side has not issued: the groups are used in different orders".into());
}

/// A wait cycle in which some sides sit in a collective without precedent: none of the ranks
/// they wait for ever issued one alike (`waits::without_precedent`). The others wait in
/// collectives both sides run; those sides went where their peers never go. A divergence of
/// those sides, at their collective: they inserted it, or skipped ahead to it (a rank that
/// skipped a step's collectives reaches the step's end first), and the records cannot tell
/// which; either way the ranks parted there.
fn departed_in_cycle(
    trace: &Trace,
    d: &mut Diagnosis,
    cycle: &[usize],
    departed: &[usize],
    pg_label: &dyn Fn(usize) -> String,
) {
    d.category = Category::Divergence;
    d.culprit_ranks =
        departed.iter().flat_map(|&g| d.groups[g].ranks.as_slice().to_vec()).collect();
    let first = departed[0];
    let Position::At(at) = d.groups[first].position.clone() else { return };
    d.process_group = Some(at.pg);
    d.collective_seq_id = Some(at.seq);
    // Who waits for the departed ranks in the cycle: the side before them.
    let at_cycle = cycle.iter().position(|&g| g == first).unwrap_or(0);
    let before = cycle[(at_cycle + cycle.len() - 1) % cycle.len()];
    let waiting = &d.groups[before];
    let site = at.site.as_ref().map(|f| format!(" from {}:{}", short_path(&f.file), f.line));
    let used = |r: u32| {
        trace.rank(r).is_some_and(|dump| {
            dump.entries.iter().any(|e| *e.pg_name() == trace.process_groups[at.pg].name)
        })
    };
    let never_used = !d.groups[first].waiting_for.as_slice().iter().any(|&r| used(r));
    let awaited = d.groups[first].waiting_for.brief();
    let how = if never_used {
        format!("on a group none of the rank(s) they wait for ({awaited}) ever used")
    } else {
        format!("which none of the rank(s) they wait for ({awaited}) ever issued there")
    };
    d.headline = format!(
        "rank(s) {} took a different path at {} seq {}: they issued {} {} {}{}, {how}, while rank(s) {} wait for them in {}",
        d.culprit_ranks.brief(),
        pg_label(at.pg),
        at.seq,
        at.op,
        sizes_text(&at.input_sizes),
        dtypes_text(&at.dtypes),
        site.unwrap_or_default(),
        waiting.ranks.brief(),
        describe_wait(trace, waiting)
    )
    .replace("  ", " ");
    d.evidence.push(format!(
        "the ranks wait for each other across process groups, but no order inversion: a deadlock needs each side to wait in a collective the other side also runs, and rank(s) {}'s has no precedent among the ranks it waits for",
        d.culprit_ranks.brief()
    ));
    d.evidence.push(
        "the departed ranks inserted that collective, or skipped ahead to it; the records show where they parted, not which".into(),
    );
}

/// A group of the cycle whose members no record shows (assumed to span the world) and whose
/// wait may rest on a rank that is not a member. Its collective never completed, so it has
/// some member that did not issue it; when every rank that did not is stuck waiting for the
/// group's own ranks, whichever of them the members are, the wait leads back and a cycle
/// stands.
fn assumed_group_in(trace: &Trace, d: &Diagnosis, cycle: &[usize]) -> Option<usize> {
    let waits_back = |g: usize, r: u32| {
        d.groups.iter().enumerate().any(|(h, other)| {
            h != g
                && other.stuck
                && other.ranks.contains(r)
                && other.waiting_for.as_slice().iter().any(|&w| d.groups[g].ranks.contains(w))
        })
    };
    cycle.iter().find_map(|&g| match &d.groups[g].position {
        Position::At(at)
            if trace.process_groups[at.pg].membership == Membership::AssumedWorld
                && !d.groups[g].waiting_for.as_slice().iter().all(|&r| waits_back(g, r)) =>
        {
            Some(at.pg)
        }
        _ => None,
    })
}

fn unproven_cycle(trace: &Trace, d: &mut Diagnosis, cycle: &[usize], pg: usize) {
    d.category = Category::Inconclusive;
    let ranks: RankSet =
        cycle.iter().flat_map(|&g| d.groups[g].ranks.as_slice().to_vec()).collect();
    d.process_group = Some(pg);
    d.collective_seq_id = d.groups[cycle[0]].position_seq();
    d.headline = format!(
        "rank(s) {} wait for each other across process groups, but the cycle rests on the members of {}, which no record lists: only one rank's entries name it, and not every rank it may wait for waits for it in turn. Not called a deadlock",
        ranks.brief(),
        trace.process_groups[pg].label()
    );
    d.evidence.push(
        "a group named by one rank alone whose collective never completed has members nobody recorded (Gloo writes no member lists once sub-groups exist)".into(),
    );
}

/// A rank waits in a send (or recv) whose peer went past the point of its half without
/// posting it (`align/p2p.rs`: counted from what both ranks' ring buffers hold). Like a stall:
/// the peer never issued what the rank waits in, and nothing it issued conflicts.
fn unmatched_p2p(
    d: &mut Diagnosis,
    pg: usize,
    m: &crate::align::P2pMismatch,
    pg_label: &dyn Fn(usize) -> String,
) {
    let (poster, peer) = m.poster_and_peer();
    let (posted, missing, direction) = match m.kind {
        crate::align::P2pProblem::RecvUnmatched => ("recv", "send", "from"),
        _ => ("send", "recv", "to"),
    };
    d.category = Category::Stall;
    d.culprit_ranks = RankSet::new(vec![peer]);
    d.process_group = Some(pg);
    d.collective_seq_id = Some(m.seq);
    d.missing_p2p = Some(missing);
    let went_to = m.peer_at.map_or_else(String::new, |at| format!(" (it issued seq {at})"));
    d.headline = format!(
        "rank {poster} waits in {posted} {direction} rank {peer} on {}, posted after seq {}; rank {peer} went past that point{went_to} without posting the matching {missing}",
        pg_label(pg),
        m.seq
    );
    d.evidence.push(format!(
        "p2p {}->{} #{} counted from the first collective both ranks' records still hold: rank {poster}'s {posted} has not completed, and rank {peer} holds no {missing} for it",
        m.src, m.dst, m.index
    ));
}

fn stall(
    trace: &Trace,
    d: &mut Diagnosis,
    stuck: &RankSet,
    waited_for: &RankSet,
    pg_label: &dyn Fn(usize) -> String,
) {
    // Follow the chain: ranks waited for that are themselves stuck are not the cause.
    let roots: RankSet =
        waited_for.as_slice().iter().copied().filter(|&r| !stuck.contains(r)).collect();
    let culprits = if roots.is_empty() { waited_for.clone() } else { roots };
    d.category = Category::Stall;
    d.culprit_ranks = culprits.clone();
    if let Some((pg, seq)) = d.stuck_at {
        d.process_group = Some(pg);
        d.collective_seq_id = Some(seq);
    }
    // Who waits, and where: the stuck ranks that are not culprits themselves, at the place of
    // a group that waits for a culprit. (When every rank waited for is stuck too, the culprits
    // are among the stuck, at their own earlier place.)
    let waiters: RankSet =
        stuck.as_slice().iter().copied().filter(|&r| !culprits.contains(r)).collect();
    let waiters = if waiters.is_empty() { stuck.clone() } else { waiters };
    let waits_for_culprit =
        |g: &&BehaviourGroup| g.waiting_for.as_slice().iter().any(|&r| culprits.contains(r));
    let waiting = d
        .groups
        .iter()
        .filter(|g| g.stuck)
        .find(waits_for_culprit)
        .or_else(|| d.groups.iter().find(|g| g.stuck))
        .map(|g| describe_wait(trace, g))
        .unwrap_or_default();
    let last: Vec<String> = d
        .groups
        .iter()
        .filter(|g| g.ranks.as_slice().iter().any(|&r| culprits.contains(r)))
        .map(|g| match &g.position {
            Position::At(at) => format!(
                "rank(s) {} last issued {} seq {} of {}",
                g.ranks,
                at.op,
                at.seq,
                pg_label(at.pg)
            ),
            Position::Idle => format!("rank(s) {} recorded no collective", g.ranks),
            Position::NoDump => format!("rank(s) {} left no dump", g.ranks),
        })
        .collect();
    d.headline = format!(
        "rank(s) {} wait in {waiting}, which rank(s) {} never issued; they issued nothing conflicting (CPU-side stuck or slow: data loading, I/O, a host-side lock)",
        waiters.brief(),
        culprits.brief()
    );
    d.evidence.extend(last);
}

fn gpu_hang(
    trace: &Trace,
    alignment: &Alignment,
    d: &mut Diagnosis,
    stuck: &RankSet,
    pg_label: &dyn Fn(usize) -> String,
) {
    // Each stuck behaviour group at its own position: with TP/DP subgroups the stuck ranks sit
    // in different groups, and a rank has no entries in a group it is not a member of.
    let stuck_groups: Vec<(&BehaviourGroup, State, &At)> = d
        .groups
        .iter()
        .filter(|g| g.stuck)
        .filter_map(|g| {
            let Position::At(at) = &g.position else { return None };
            let rep = g.ranks.as_slice()[0];
            let state = alignment.groups[at.pg].entries_at(trace, rep, at.seq).last()?.state;
            Some((g, state, at))
        })
        .collect();
    let never_started: RankSet = stuck_groups
        .iter()
        .filter(|(_, s, _)| *s == State::Scheduled)
        .flat_map(|(g, _, _)| g.ranks.as_slice().to_vec())
        .collect();
    let culprits = if never_started.is_empty() || never_started == *stuck {
        stuck.clone()
    } else {
        never_started.clone()
    };
    let Some((_, _, at)) = stuck_groups
        .iter()
        .find(|(g, _, _)| g.ranks.as_slice().iter().any(|&r| culprits.contains(r)))
    else {
        return;
    };
    d.category = Category::GpuHang;
    d.culprit_ranks = culprits.clone();
    d.process_group = Some(at.pg);
    d.collective_seq_id = Some(at.seq);
    let how = if never_started.is_empty() {
        "started but never completed"
    } else {
        "was enqueued but never started"
    };
    d.headline = format!(
        "all ranks issued {} at {} seq {} compatibly, but it {how} on rank(s) {}: a kernel, NCCL or network hang",
        at.op,
        pg_label(at.pg),
        at.seq,
        culprits.brief()
    );
    let group = &alignment.groups[at.pg];
    if let Some(c) = group.stream(culprits.as_slice()[0]).and_then(|s| s.progress.last_completed) {
        d.evidence.push(format!(
            "seq {c} and earlier completed on rank(s) {culprits} in {}",
            pg_label(at.pg)
        ));
    }
    d.evidence.push(
        "FR records no dump time: a dump taken on demand while the job ran shows in-flight collectives the same way".into(),
    );
}

/// Does the group's rank wait in a different process group than the order of groups it used
/// before predicts (the same group one period back)? Runs of one group count once.
fn breaks_group_order(trace: &Trace, group: &BehaviourGroup) -> bool {
    let Position::At(at) = &group.position else { return false };
    let Some(dump) = trace.rank(group.ranks.as_slice()[0]) else { return false };
    let mut entries: Vec<&crate::model::Entry> =
        dump.entries.iter().filter(|e| !e.is_p2p()).collect();
    entries.sort_by_key(|e| e.record_id);
    // History is everything before the current collective (the latest record).
    entries.pop();
    let mut order: Vec<&str> = Vec::new();
    for e in &entries {
        if order.last() != Some(&&**e.pg_name()) {
            order.push(e.pg_name());
        }
    }
    let current = &*trace.process_groups[at.pg].name;
    // The smallest period that explains the recent history predicts the next group.
    earliest::next_by_period(&order, 8, |a, b| a == b).is_some_and(|predicted| predicted != current)
}

pub(crate) fn short_path(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `all_reduce at train.py:64`, or without frames `all_reduce`.
fn interval_end_text(end: &timing::IntervalEnd) -> String {
    let site = end
        .call_site
        .as_ref()
        .map(|f| format!(" at {}:{}", short_path(&f.file), f.line))
        .unwrap_or_default();
    format!("{}{site}", end.op)
}

pub(crate) fn sizes_text(sizes: &[Vec<i64>]) -> String {
    let inner: Vec<String> = sizes
        .iter()
        .map(|s| format!("[{}]", s.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")))
        .collect();
    format!("[{}]", inner.join(", "))
}

pub(crate) fn dtypes_text(dtypes: &[std::sync::Arc<str>]) -> String {
    let mut names: Vec<&str> = dtypes.iter().map(|d| &**d).collect();
    names.dedup();
    names.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One collective a rank issued: (group name, seq, op, elements, user line).
    type Call = (&'static str, u64, &'static str, i64, u32);

    /// Writes one JSON dump per rank (Gloo-style: no states; `pg_status` says the last
    /// collective of each group was enqueued and the ones before it completed), loads the
    /// folder and diagnoses it.
    fn diagnose_job(groups: &[(&str, &[u32])], calls: &[Vec<Call>]) -> Diagnosis {
        let dir = tempfile::tempdir().unwrap();
        let config: serde_json::Map<String, serde_json::Value> = groups
            .iter()
            .map(|(name, ranks)| {
                let desc = if *name == "0" { "default_pg" } else { "undefined" };
                (
                    (*name).to_owned(),
                    serde_json::json!({"name": name, "desc": desc, "ranks": format!("{ranks:?}")}),
                )
            })
            .collect();
        for (rank, calls) in calls.iter().enumerate() {
            let pg_id = |name: &str| groups.iter().position(|(n, _)| *n == name).unwrap();
            let entries: Vec<serde_json::Value> = calls
                .iter()
                .enumerate()
                .map(|(i, &(pg, seq, op, n, line))| {
                    serde_json::json!({
                        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": i + 1,
                        "record_id": i, "pg_id": pg_id(pg),
                        "process_group": [pg, if pg == "0" { "default_pg" } else { "undefined" }],
                        "profiling_name": format!("gloo:{op}"), "is_p2p": false,
                        "input_sizes": [[n]], "output_sizes": [[n]],
                        "input_dtypes": ["Float"], "output_dtypes": ["Float"],
                        "state": "scheduled", "retired": i + 1 < calls.len(),
                        "time_created_ns": 1_000_000_000 + i as i64 * 1_000_000,
                        "timeout_ms": 600_000,
                        "frames": [{"name": "step", "filename": "/job/train.py", "line": line}],
                    })
                })
                .collect();
            let mut status = serde_json::Map::new();
            for (name, _) in groups {
                let Some(last) = calls.iter().filter(|c| c.0 == *name).map(|c| c.1).max() else {
                    continue;
                };
                status.insert(
                    pg_id(name).to_string(),
                    serde_json::json!({
                        "last_enqueued_collective": last.to_string(),
                        "last_started_collective": "-1",
                        "last_completed_collective": (last - 1).to_string(),
                    }),
                );
            }
            let dump = serde_json::json!({
                "version": "2.10", "comm_lib_version": "", "pg_config": config,
                "pg_status": status, "entries": entries,
            });
            std::fs::write(dir.path().join(format!("trace_rank_{rank}")), dump.to_string())
                .unwrap();
        }
        let trace =
            crate::load::load(dir.path(), &crate::load::LoadOptions::default(), &crate::NoProgress)
                .unwrap();
        let alignment = crate::align::align(&trace);
        diagnose(&trace, &alignment)
    }

    fn steps(count: u64, per_step: &[(&'static str, &'static str, i64, u32)]) -> Vec<Call> {
        let mut seq: FxHashMap<&str, u64> = FxHashMap::default();
        let mut out = Vec::new();
        for _ in 0..count {
            for &(pg, op, n, line) in per_step {
                let s = seq.entry(pg).or_insert(0);
                *s += 1;
                out.push((pg, *s, op, n, line));
            }
        }
        out
    }

    #[test]
    fn a_cycle_through_a_collective_its_peers_never_issued_is_that_sides_divergence() {
        // Four ranks all-reduce on the world group each step; after three steps rank 2 alone
        // all-gathers on a pair group {1, 2} that rank 1 never used, while the others go on
        // to the fourth step's all_reduce. Rank 2 waits for 1 there, 0, 1 and 3 wait for 2:
        // a cycle, but only rank 2 went where nobody else goes.
        let world: &[u32] = &[0, 1, 2, 3];
        let groups: &[(&str, &[u32])] = &[("0", world), ("7", &[1, 2])];
        let common = steps(3, &[("0", "all_reduce", 256, 20)]);
        let on = |extra: Call| [common.clone(), vec![extra]].concat();
        let d = diagnose_job(
            groups,
            &[
                on(("0", 4, "all_reduce", 256, 20)),
                on(("0", 4, "all_reduce", 256, 20)),
                on(("7", 1, "all_gather", 16, 40)),
                on(("0", 4, "all_reduce", 256, 20)),
            ],
        );
        assert!(d.cycle.is_some(), "the ranks wait for each other across groups");
        assert_eq!(d.category, Category::Divergence, "{}", d.headline);
        assert_eq!(d.culprit_ranks.as_slice(), [2]);
        assert_eq!(d.collective_seq_id, Some(1));
    }

    #[test]
    fn an_order_inversion_stays_a_deadlock_even_from_a_moved_line() {
        // Two ranks reduce on groups "1" then "2" each step; in the fourth step rank 1
        // reduces on "2" first, from another line. Each waits in a collective the other runs
        // every step: an inversion.
        let pair: &[u32] = &[0, 1];
        let groups: &[(&str, &[u32])] = &[("0", pair), ("1", pair), ("2", pair)];
        let common = steps(3, &[("1", "all_reduce", 8, 30), ("2", "all_reduce", 64, 31)]);
        let on = |extra: Call| [common.clone(), vec![extra]].concat();
        let d = diagnose_job(
            groups,
            &[on(("1", 4, "all_reduce", 8, 30)), on(("2", 4, "all_reduce", 64, 35))],
        );
        assert_eq!(d.category, Category::Deadlock, "{}", d.headline);
        assert_eq!(d.culprit_ranks.as_slice(), [1]);
    }
}
