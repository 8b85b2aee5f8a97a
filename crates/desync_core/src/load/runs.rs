//! Run identity: which of the dumps found belong to the run being diagnosed.
//!
//! Dump directories are collected by hand and reused, so one often holds more than one run:
//! the previous attempt's dumps in a subfolder or under another prefix, a rank's file left
//! over from an earlier run, or, inside one file, a process group destroyed and created again
//! in the same process (an in-process restart: torch names the new default group "0" again and
//! its seqs restart at 1, while the recorder keeps the old group's entries). Mixing runs
//! silently gives wrong answers in both directions (stale healthy copies hide a hang, stale
//! ranks blame healthy ones), so each rule below keeps the newest run and says what it set
//! aside, with the evidence:
//!
//! 1. **Incarnations** (per dump): entries of one group name are split where the process-local
//!    `pg_id` changes or, in record order, the collective seq goes back. Only the latest
//!    incarnation is kept.
//! 2. **Families** (per set): dumps are grouped by folder and file-name prefix. When two
//!    families hold the same ranks and their newest entries differ, they are different runs:
//!    the one whose newest entry is older is set aside whole. Equal newest entries are the same
//!    run written twice (a copy, a summary beside its dump): an ordinary duplicate.
//! 3. **Duplicates** (per rank): of two files of one run for a rank, the one with the newer
//!    newest entry is used, then the one with more entries.
//! 4. **Stale ranks**: ranks whose newest collective is the same `(group, seq)` issued it within
//!    the collective's timeout of each other, or the earlier ones would have timed out first.
//!    A rank that issued it far earlier than that (see [`stale_after_ns`]) is from an earlier
//!    run: its dump is set aside, and the rank counts as having no dump.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashSet;

use super::{discover, warn};
use crate::model::{RankDump, Warning, WarningKind, format_ranks};

/// Keeps the latest incarnation of every process group in one dump; returns the groups that
/// had an earlier one, in words ("pg 0", "pg 0 (2 times)"), and how many entries went.
pub(super) fn keep_latest_incarnation(dump: &mut RankDump) -> Option<(String, usize)> {
    // Record order is the process's own order of events, across groups.
    let mut order: Vec<usize> = (0..dump.entries.len()).collect();
    order.sort_by_key(|&i| dump.entries[i].record_id);
    // Per group name: (pg_id, last collective seq, record id from which entries are kept).
    let mut current: BTreeMap<&str, (i64, u64, u64)> = BTreeMap::new();
    let mut restarts: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &order {
        let e = &dump.entries[i];
        let name = &**e.pg_name();
        let seq = (!e.is_p2p()).then_some(e.collective_seq_id);
        match current.get_mut(name) {
            None => {
                current.insert(name, (e.pg_id(), seq.unwrap_or(0), e.record_id));
            }
            Some(state) => {
                let went_back = seq.is_some_and(|s| s < state.1);
                if e.pg_id() != state.0 || went_back {
                    *state = (e.pg_id(), 0, e.record_id);
                    *restarts.entry(name.to_owned()).or_default() += 1;
                }
                if let Some(s) = seq {
                    state.1 = state.1.max(s);
                }
            }
        }
    }
    if restarts.is_empty() {
        return None;
    }
    let keep_from: BTreeMap<String, u64> =
        current.into_iter().map(|(name, (_, _, from))| (name.to_owned(), from)).collect();
    let before = dump.entries.len();
    dump.entries.retain(|e| keep_from.get(&**e.pg_name()).is_none_or(|&from| e.record_id >= from));
    let groups: Vec<String> = restarts
        .iter()
        .map(|(name, n)| match n {
            1 => format!("pg {name}"),
            n => format!("pg {name} ({n} times)"),
        })
        .collect();
    Some((groups.join(", "), before - dump.entries.len()))
}

/// One warning per set of re-created groups, for every rank that had them (a restart of the
/// whole job's group happens on every rank: one line, not one per rank).
pub(super) fn incarnation_warnings(found: Vec<(u32, String, usize)>, warnings: &mut Vec<Warning>) {
    let mut by_groups: BTreeMap<String, (Vec<u32>, usize)> = BTreeMap::new();
    for (rank, groups, dropped) in found {
        let slot = by_groups.entry(groups).or_default();
        slot.0.push(rank);
        slot.1 += dropped;
    }
    for (groups, (mut ranks, dropped)) in by_groups {
        ranks.sort_unstable();
        let message = format!(
            "rank(s) {}: {groups} was destroyed and created again in the same process (a new pg_id, or seqs that restart): the {dropped} entries of the earlier incarnation are set aside, the latest one is analysed",
            format_ranks(&ranks)
        );
        warnings.push(warn(WarningKind::Run, None, None, message));
    }
}

/// The dumps of the newest run, one per rank, with a warning for every file set aside.
pub(super) fn choose(dumps: Vec<RankDump>, warnings: &mut Vec<Warning>) -> Vec<RankDump> {
    let dumps = set_aside_older_families(dumps, warnings);
    let dumps = dedup_ranks(dumps, warnings);
    set_aside_stale_ranks(dumps, warnings)
}

/// The newest entry a dump holds (its process's latest recorded event), if any.
fn newest(dump: &RankDump) -> Option<i64> {
    dump.entries.iter().map(crate::model::Entry::created_ns).max()
}

/// Folder and file-name prefix: the files one writer (torch's dump path) produced.
fn family_of(path: &Path) -> (PathBuf, String) {
    let folder = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let prefix = discover::split_rank(name).map_or(name, |(prefix, _)| prefix);
    (folder, prefix.to_owned())
}

struct Family {
    key: (PathBuf, String),
    members: Vec<usize>,
    newest: Option<i64>,
}

fn set_aside_older_families(dumps: Vec<RankDump>, warnings: &mut Vec<Warning>) -> Vec<RankDump> {
    let mut by_key: BTreeMap<(PathBuf, String), Vec<usize>> = BTreeMap::new();
    for (i, d) in dumps.iter().enumerate() {
        by_key.entry(family_of(&d.path)).or_default().push(i);
    }
    if by_key.len() < 2 {
        return dumps;
    }
    let mut families: Vec<Family> = by_key
        .into_iter()
        .map(|(key, members)| {
            let newest = members.iter().filter_map(|&i| newest(&dumps[i])).max();
            Family { key, members, newest }
        })
        .collect();
    // Newest first; a family with no entries at all says nothing about when it ran.
    families.sort_by(|a, b| {
        b.newest
            .is_some()
            .cmp(&a.newest.is_some())
            .then(b.newest.cmp(&a.newest))
            .then(b.members.len().cmp(&a.members.len()))
            .then(a.key.cmp(&b.key))
    });
    // Rank -> (kept family, its dump of that rank).
    let mut owner: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut set_aside: FxHashSet<usize> = FxHashSet::default();
    for (f, family) in families.iter().enumerate() {
        // The same rank in two sets: equal newest entries are one run written twice; the first
        // rank whose newest entries differ tells which set is the older run.
        let differing = family.members.iter().find_map(|&i| {
            let &(kept_family, kept) = owner.get(&dumps[i].rank)?;
            (newest(&dumps[i]) != newest(&dumps[kept])).then_some((i, kept_family, kept))
        });
        let keep_this = match differing {
            None => true,
            Some((this, kept_family, kept)) => {
                let (older, newer_dump, older_dump) = if newest(&dumps[this]) < newest(&dumps[kept])
                {
                    (f, kept, this)
                } else {
                    (kept_family, this, kept)
                };
                let older_family = &families[older];
                set_aside.extend(older_family.members.iter().copied());
                owner.retain(|_, (fam, _)| *fam != older);
                warnings.push(family_warning(
                    &dumps,
                    older_family,
                    &dumps[newer_dump],
                    &dumps[older_dump],
                ));
                older != f
            }
        };
        if keep_this {
            for &i in &family.members {
                owner.entry(dumps[i].rank).or_insert((f, i));
            }
        }
    }
    dumps.into_iter().enumerate().filter(|(i, _)| !set_aside.contains(i)).map(|(_, d)| d).collect()
}

fn family_warning(
    dumps: &[RankDump],
    family: &Family,
    newer: &RankDump,
    older: &RankDump,
) -> Warning {
    let mut ranks: Vec<u32> = family.members.iter().map(|&i| dumps[i].rank).collect();
    ranks.sort_unstable();
    let label = family.key.0.join(format!("{}*", family.key.1));
    let age = match (newest(newer), newest(older)) {
        (Some(kept), Some(this)) => {
            format!("its newest entry there is {} older", span(kept - this))
        }
        _ => "it holds no entry there".to_owned(),
    };
    let message = format!(
        "set aside {} dump(s) of another run ({}, rank(s) {}): rank {} also has a dump in a newer set ({}), and {age}; only the newest run is analysed",
        family.members.len(),
        label.display(),
        format_ranks(&ranks),
        newer.rank,
        newer.path.display()
    );
    warn(WarningKind::Run, Some(label), None, message)
}

/// Two files of one run for a rank (a re-dump, a copy, a summary beside its dump): the newer
/// newest entry wins, then more entries.
fn dedup_ranks(mut dumps: Vec<RankDump>, warnings: &mut Vec<Warning>) -> Vec<RankDump> {
    dumps.sort_by(|a, b| {
        a.rank
            .cmp(&b.rank)
            .then(newest(b).cmp(&newest(a)))
            .then(b.entries.len().cmp(&a.entries.len()))
            .then(a.path.cmp(&b.path))
    });
    let mut kept: Vec<RankDump> = Vec::with_capacity(dumps.len());
    for dump in dumps {
        match kept.last() {
            Some(prev) if prev.rank == dump.rank => {
                let message = format!(
                    "rank {} has two dumps; using {} ({} entries), ignoring this one ({} entries)",
                    dump.rank,
                    prev.path.display(),
                    prev.entries.len(),
                    dump.entries.len()
                );
                warnings.push(warn(
                    WarningKind::DuplicateRank,
                    Some(dump.path),
                    Some(dump.rank),
                    message,
                ));
            }
            _ => kept.push(dump),
        }
    }
    kept
}

/// How much earlier than its peers a rank may have issued the same collective and still be of
/// the same run. Peers wait at most the collective's timeout; a rank that arrives just after a
/// peer timed out is still recorded (the dump signal reaches it later), so the bound is twice
/// the timeout, and never under a minute past it (clocks of different hosts, dump latency).
fn stale_after_ns(timeout_ms: u32) -> i64 {
    let timeout = i64::from(timeout_ms) * 1_000_000;
    (2 * timeout).max(timeout + 60_000_000_000)
}

/// When a rank issued a collective: (time created, its timeout in ms, the dump's index).
type Arrival = (i64, u32, usize);

fn set_aside_stale_ranks(dumps: Vec<RankDump>, warnings: &mut Vec<Warning>) -> Vec<RankDump> {
    // Ranks by their newest collective: (group, seq) -> [(time created, timeout, index)].
    let mut last: BTreeMap<(&str, u64), Vec<Arrival>> = BTreeMap::new();
    for (i, d) in dumps.iter().enumerate() {
        let newest = d.entries.iter().filter(|e| !e.is_p2p()).max_by_key(|e| e.record_id);
        if let Some(e) = newest
            && let Some(timeout) = e.timeout_ms()
        {
            last.entry((&**e.pg_name(), e.collective_seq_id)).or_default().push((
                e.created_ns(),
                timeout,
                i,
            ));
        }
    }
    let mut stale: Vec<(usize, String)> = Vec::new();
    for ((pg, seq), mut ranks) in last {
        if ranks.len() < 2 {
            continue;
        }
        ranks.sort_unstable();
        // The newest cluster: walk back from the latest while the gaps stay within the bound.
        let mut start = ranks.len() - 1;
        while start > 0 && ranks[start].0 - ranks[start - 1].0 <= stale_after_ns(ranks[start].1) {
            start -= 1;
        }
        let mut newer: Vec<u32> = ranks[start..].iter().map(|&(_, _, i)| dumps[i].rank).collect();
        newer.sort_unstable();
        let newer_first = ranks[start].0;
        for &(created, timeout, i) in &ranks[..start] {
            let message = format!(
                "set aside rank {}'s dump as another run's: its newest collective is seq {seq} of pg {pg}, as for rank(s) {}, but it issued it {} before they did, far past the collective's {} timeout (peers wait at most that long); rank {} is analysed as having no dump",
                dumps[i].rank,
                format_ranks(&newer),
                span(newer_first - created),
                span(i64::from(timeout) * 1_000_000),
                dumps[i].rank
            );
            stale.push((i, message));
        }
    }
    if stale.is_empty() {
        return dumps;
    }
    let set_aside: FxHashSet<usize> = stale.iter().map(|(i, _)| *i).collect();
    for (i, message) in stale {
        let d = &dumps[i];
        warnings.push(warn(WarningKind::Run, Some(d.path.clone()), Some(d.rank), message));
    }
    dumps.into_iter().enumerate().filter(|(i, _)| !set_aside.contains(i)).map(|(_, d)| d).collect()
}

/// A duration in words: "40 ms", "6 s", "12 min", "2 h 5 min".
fn span(ns: i64) -> String {
    let ms = ns / 1_000_000;
    match ms {
        ..1_000 => format!("{ms} ms"),
        1_000..120_000 => format!("{} s", ms / 1_000),
        120_000..7_200_000 => format!("{} min", ms / 60_000),
        _ => format!("{} h {} min", ms / 3_600_000, ms % 3_600_000 / 60_000),
    }
}

#[cfg(test)]
mod tests {
    use super::span;

    #[test]
    fn spans_read_in_the_unit_that_fits() {
        assert_eq!(span(40_000_000), "40 ms");
        assert_eq!(span(6_000_000_000), "6 s");
        assert_eq!(span(720_000_000_000), "12 min");
        assert_eq!(span(7_500_000_000_000), "2 h 5 min");
    }
}
