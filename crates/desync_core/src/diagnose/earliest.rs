//! The earliest point where ranks stopped agreeing, and how the departing side departed.
//!
//! The first conflicting collective (op, size, dtype or `all_to_all` totals) is taken per group,
//! and the earliest of those by creation time across groups: the job may be stuck elsewhere,
//! later. Each rank's stream is then compared like a diff against the reference side: an
//! inserted or skipped run is a divergence even without frames; a different call site or op
//! is a divergence; the same op with other sizes or dtypes is a metadata mismatch.

use crate::align::{
    Alignment, Difference, GroupAlignment, Mismatch, MismatchKind, StreamClass, Token,
};
use crate::model::{Entry, Trace};

/// Longest insertion or skip looked for when aligning streams.
const MAX_SHIFT: u64 = 8;

#[derive(Debug, Clone)]
pub struct Earliest {
    pub mismatch: Mismatch,
    /// Creation time of the earliest entry at this collective, when recorded.
    pub time_ns: Option<i64>,
    /// Index into `mismatch.sides` of the side that kept to the pattern.
    pub reference: usize,
    /// Indices into `mismatch.sides` of the sides that departed.
    pub departed: Vec<usize>,
    pub departure: Departure,
    /// Why the reference side is taken as the normal path, for the evidence list.
    pub reference_reason: &'static str,
    /// When the call paths parted before the first conflicting collective (`mismatch` is
    /// then where they parted, of kind `call_path`): that conflict, the symptom.
    pub symptom: Option<Symptom>,
}

/// The first conflicting collective, when the ranks had already parted before it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Symptom {
    pub collective_seq_id: u64,
    pub kind: MismatchKind,
    /// How the departing side's collective there differs (as it reads on its own).
    pub departure: Departure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Departure {
    /// The departing ranks issued `count` collectives their peers did not.
    Inserted { count: u64 },
    /// The departing ranks skipped `count` collectives their peers issued.
    Skipped { count: u64 },
    /// A different operation at the same sequence id.
    DifferentOp,
    /// The same operation, issued from a different line of code.
    DifferentCallSite,
    /// The same operation from the same call site with other sizes or dtypes.
    Substituted { difference: Difference },
    /// `all_to_all` totals that do not add up.
    Numel,
    /// No frames and no visible shift, but the departing ranks' collective breaks the pattern
    /// every rank followed, was never issued before, and its shape is unrelated to the one
    /// the others issued: an extra or missing call, not a ragged variant of the same call.
    BrokePattern,
}

impl Departure {
    /// A short phrase for reports.
    pub fn describe(self) -> String {
        match self {
            Self::Inserted { count } => {
                format!("{count} extra collective(s) on the departing ranks")
            }
            Self::Skipped { count } => {
                format!("{count} collective(s) skipped by the departing ranks")
            }
            Self::DifferentOp => "a different operation".into(),
            Self::DifferentCallSite => "a different call site".into(),
            Self::Substituted { .. } => "same call, other metadata".into(),
            Self::Numel => "all_to_all totals differ".into(),
            Self::BrokePattern => "a collective that breaks the pattern".into(),
        }
    }

    pub fn is_divergence(self) -> bool {
        !matches!(self, Self::Substituted { .. } | Self::Numel)
    }
}

pub fn earliest(trace: &Trace, alignment: &Alignment) -> Option<Earliest> {
    let first_per_group = alignment.groups.iter().filter_map(|g| {
        let m = g.mismatches.iter().find(|m| is_conflict(m.kind))?;
        Some((g, m, creation_time(trace, g, m)))
    });
    let (group, mismatch, time_ns) =
        first_per_group.min_by_key(|(g, m, t)| (t.unwrap_or(i64::MAX), m.seq, g.pg))?;
    Some(explain(trace, group, mismatch, time_ns))
}

pub fn is_conflict(kind: MismatchKind) -> bool {
    matches!(
        kind,
        MismatchKind::Op | MismatchKind::Size | MismatchKind::Dtype | MismatchKind::Numel
    )
}

fn creation_time(trace: &Trace, group: &GroupAlignment, m: &Mismatch) -> Option<i64> {
    m.sides
        .iter()
        .filter_map(|s| s.holder)
        .flat_map(|r| group.entries_at(trace, r, m.seq))
        .map(Entry::created_ns)
        .filter(|&t| t > 0)
        .min()
}

fn explain(trace: &Trace, group: &GroupAlignment, m: &Mismatch, time_ns: Option<i64>) -> Earliest {
    if m.kind == MismatchKind::Numel {
        return Earliest {
            mismatch: m.clone(),
            time_ns,
            reference: 0,
            departed: Vec::new(),
            departure: Departure::Numel,
            reference_reason: "all ranks take part in an all_to_all whose totals do not add up",
            symptom: None,
        };
    }
    let issued: Vec<usize> = (0..m.sides.len()).filter(|&i| m.sides[i].holder.is_some()).collect();
    let class = |i: usize| m.sides[i].holder.and_then(|r| group.class_of(r));
    let (reference, reason) = choose_reference(group, m, &issued);
    let departed: Vec<usize> = issued.iter().copied().filter(|&i| i != reference).collect();
    let classes = class(reference).zip(departed.first().and_then(|&i| class(i)));
    let departure = match classes {
        Some((r, d)) => departure(trace, group, m, r, d),
        _ => Departure::DifferentOp,
    };
    let parted = classes.and_then(|(r, d)| paths_parted(group, m.seq, r, d));
    let Some(seq) = parted else {
        return Earliest {
            mismatch: m.clone(),
            time_ns,
            reference,
            departed,
            departure,
            reference_reason: reason,
            symptom: None,
        };
    };
    let mut at = m.clone();
    at.seq = seq;
    at.kind = MismatchKind::CallPath;
    let time_ns = creation_time(trace, group, &at).or(time_ns);
    Earliest {
        mismatch: at,
        time_ns,
        reference,
        departed,
        departure: Departure::DifferentCallSite,
        reference_reason: reason,
        symptom: Some(Symptom { collective_seq_id: m.seq, kind: m.kind, departure }),
    }
}

/// The first seq of the run of collectives, right before the conflict at `seq`, that both
/// sides issued alike (op, sizes, dtypes) but reached by different call paths: the ranks had
/// already parted there, and their collectives paired by shape until `seq` (a per-step
/// token-count `all_reduce` against an evaluation one of the same shape). `None` when the
/// paths are the same just before the conflict, or at it (the same call with other metadata
/// is a metadata mismatch, whatever happened earlier), or the dumps carry no frames.
fn paths_parted(
    group: &GroupAlignment,
    seq: u64,
    reference: &StreamClass,
    departed: &StreamClass,
) -> Option<u64> {
    let apart = |s: u64| -> Option<bool> {
        let (r, d) = (reference.token(s)?, departed.token(s)?);
        (r.path != 0 && d.path != 0).then_some(r.path != d.path)
    };
    if apart(seq) != Some(true) {
        return None;
    }
    let mut parted = None;
    for &s in group.seqs.iter().rev().filter(|&&s| s < seq && s >= group.window_start) {
        let same_shape =
            reference.token(s).zip(departed.token(s)).is_some_and(|(r, d)| r.sig == d.sig);
        if !same_shape || apart(s) != Some(true) {
            break;
        }
        parted = Some(s);
    }
    parted
}

/// The side most ranks are on; on an even split, the side whose collective fits the pattern
/// all ranks followed before (the same token one period earlier, or a token seen before).
fn choose_reference(
    group: &GroupAlignment,
    m: &Mismatch,
    issued: &[usize],
) -> (usize, &'static str) {
    let size = |i: usize| m.sides[i].ranks.len();
    let largest =
        issued.iter().copied().max_by_key(|&i| (size(i), std::cmp::Reverse(i))).unwrap_or(0);
    let tied: Vec<usize> = issued.iter().copied().filter(|&i| size(i) == size(largest)).collect();
    if tied.len() < 2 {
        return (largest, "most ranks took it");
    }
    let history = |i: usize| -> Option<(Vec<Token>, Token)> {
        let class = group.class_of(m.sides[i].holder?)?;
        Some((history_before(class, group.window_start, m.seq), class.token(m.seq)?))
    };
    let fits: Vec<usize> = tied
        .iter()
        .copied()
        .filter(|&i| history(i).is_some_and(|(h, t)| predicted(&h).is_some_and(|p| same(p, t))))
        .collect();
    if fits.len() == 1 {
        return (
            fits[0],
            "the ranks split evenly, and theirs continues the pattern all ranks followed before",
        );
    }
    let seen: Vec<usize> = tied
        .iter()
        .copied()
        .filter(|&i| history(i).is_some_and(|(h, t)| h.iter().any(|&x| same(x, t))))
        .collect();
    if seen.len() == 1 {
        return (
            seen[0],
            "the ranks split evenly, and the other side's collective was never issued before (a new call site)",
        );
    }
    (
        largest,
        "the ranks split evenly with no pattern to tell the sides apart, so the lowest ranks' side is taken",
    )
}

fn history_before(class: &StreamClass, window_start: u64, seq: u64) -> Vec<Token> {
    class.tokens_between(window_start, seq)
}

/// The token one period back, when the history repeats with a period of up to 64 collectives.
fn predicted(history: &[Token]) -> Option<Token> {
    next_by_period(history, 64, same)
}

/// The element one period back, for the smallest period (up to `max_period`) that explains
/// the last two periods of `history` (fewer when the history is short).
pub(crate) fn next_by_period<T: Copy>(
    history: &[T],
    max_period: usize,
    same: impl Fn(T, T) -> bool,
) -> Option<T> {
    period(history, max_period, same).map(|p| history[history.len() - p])
}

/// The smallest period (up to `max_period`) that explains the last two periods of `history`
/// (fewer when the history is short).
fn period<T: Copy>(history: &[T], max_period: usize, same: impl Fn(T, T) -> bool) -> Option<usize> {
    let n = history.len();
    (1..=max_period.min(n / 2)).find(|&p| {
        let span = (2 * p).min(n - p);
        (1..=span).all(|k| same(history[n - k], history[n - k - p]))
    })
}

/// Without frames, a rank that skipped part of a repeating step shows up as a rank whose
/// collective at `seq` is one the pattern only issues `k` collectives later (a non-finite
/// loss skipping backward: the peers are in the gradient buckets, it is already in the next
/// step's loss `all_reduce`). When the reference continues the pattern all ranks followed, and
/// the departed ranks' collectives from `seq` on are the pattern from `k` ahead, they skipped
/// `k` collectives: a divergence, not a ragged size of the same call.
fn ahead_in_pattern(
    group: &GroupAlignment,
    seq: u64,
    reference: &StreamClass,
    departed: &StreamClass,
) -> Option<Departure> {
    let history = history_before(reference, group.window_start, seq);
    let p = period(&history, 64, same)?;
    let pattern = &history[history.len() - p..];
    if !same(pattern[0], reference.token(seq)?) {
        return None;
    }
    let tail = departed.tokens_between(seq, u64::MAX);
    if tail.is_empty() {
        return None;
    }
    (1..p)
        .find(|&k| tail.iter().enumerate().all(|(i, &t)| same(pattern[(k + i) % p], t)))
        .map(|k| Departure::Skipped { count: k as u64 })
}

fn same(a: Token, b: Token) -> bool {
    a.sig == b.sig && (a.site == 0 || b.site == 0 || a.site == b.site)
}

fn departure(
    trace: &Trace,
    group: &GroupAlignment,
    m: &Mismatch,
    reference: &StreamClass,
    departed: &StreamClass,
) -> Departure {
    if let Some(d) = shift(reference, departed, m.seq) {
        return d;
    }
    if let Some(d) = ahead_in_pattern(group, m.seq, reference, departed) {
        return d;
    }
    let (Some(r), Some(d)) = (reference.token(m.seq), departed.token(m.seq)) else {
        return Departure::DifferentOp;
    };
    if m.kind == MismatchKind::Op {
        return Departure::DifferentOp;
    }
    // Another user line, or the same user line into other framework code (`trainer.train()`
    // reaching `store_flos`'s gather on one side and the step's token-count gather on the
    // other): another path, whatever the shapes say.
    let apart = |a: u64, b: u64| a != 0 && b != 0 && a != b;
    if apart(r.site, d.site) || apart(r.path, d.path) {
        return Departure::DifferentCallSite;
    }
    let holder = |c: &StreamClass| group.streams[c.representative].rank;
    let a = group.entries_at(trace, holder(reference), m.seq);
    let b = group.entries_at(trace, holder(departed), m.seq);
    let difference = crate::align::difference(&a, &b).unwrap_or(Difference::Size);
    if r.site == 0
        && d.site == 0
        && difference == Difference::Size
        && breaks_pattern(group, m.seq, reference, departed)
        && unrelated_shapes(&a, &b)
    {
        return Departure::BrokePattern;
    }
    Departure::Substituted { difference }
}

/// The reference continues its periodic history and the departed token appears nowhere in it.
fn breaks_pattern(
    group: &GroupAlignment,
    seq: u64,
    reference: &StreamClass,
    departed: &StreamClass,
) -> bool {
    let history = history_before(reference, group.window_start, seq);
    let (Some(r), Some(d)) = (reference.token(seq), departed.token(seq)) else { return false };
    predicted(&history).is_some_and(|p| same(p, r)) && !history.iter().any(|&h| same(h, d))
}

/// Shapes that cannot be a ragged variant of each other: a different number of tensors or
/// dimensions, a difference beyond the leading (batch) dimension, or element counts more than
/// 8x apart (a last batch is rarely that much smaller).
fn unrelated_shapes(a: &[&Entry], b: &[&Entry]) -> bool {
    a.iter().zip(b).any(|(x, y)| {
        let (xs, ys) = (x.input_sizes(), y.input_sizes());
        if xs.len() != ys.len() {
            return true;
        }
        xs.iter().zip(ys.iter()).any(|(p, q)| {
            if p.len() != q.len() || p.iter().skip(1).ne(q.iter().skip(1)) {
                return true;
            }
            let (n, m) = (p.iter().product::<i64>().max(1), q.iter().product::<i64>().max(1));
            n.max(m) > 8 * n.min(m)
        })
    })
}

/// Aligns the two streams from `seq` on: does one continue as the other shifted by a few?
fn shift(reference: &StreamClass, departed: &StreamClass, seq: u64) -> Option<Departure> {
    let tail = |c: &StreamClass| -> Vec<Token> { c.tokens_between(seq, u64::MAX) };
    let (r, d) = (tail(reference), tail(departed));
    let matches = |a: &[Token], b: &[Token], by: usize| -> bool {
        let len = a.len().saturating_sub(by).min(b.len());
        len > 0 && (0..len).all(|i| same(a[i + by], b[i]))
    };
    (1..=MAX_SHIFT as usize).find_map(|by| {
        if matches(&d, &r, by) {
            Some(Departure::Inserted { count: by as u64 })
        } else if matches(&r, &d, by) {
            Some(Departure::Skipped { count: by as u64 })
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(sig: u64) -> Token {
        Token { sig, site: 0, path: 0 }
    }

    #[test]
    fn period_is_the_shortest_that_repeats() {
        let h = [9, 1, 2, 3, 1, 2, 3, 1, 2, 3].map(t);
        assert_eq!(period(&h, 64, same), Some(3));
        assert_eq!(period(&[1, 2, 3, 4].map(t), 64, same), None);
    }

    #[test]
    fn period_predicts_next_token() {
        let h = [1, 2, 3, 1, 2, 3, 1, 2].map(t);
        assert_eq!(predicted(&h), Some(t(3)));
        assert_eq!(predicted(&[1, 1, 1].map(t)), Some(t(1)));
        assert_eq!(predicted(&[1, 2, 3, 4].map(t)), None);
    }
}
