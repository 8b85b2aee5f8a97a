//! Infers the world size and the members of each process group.
//!
//! `pg_config` is the first source, but it can be empty or wrong: Gloo in torch 2.11 writes
//! one item with name "" for the default group (its ranks listed, or "[]" once sub-groups
//! exist), and split groups can differ by rank (pytorch#189073). Then membership comes from
//! the entries: the default group ("0" / "`default_pg`") spans the world, other groups span the
//! ranks whose entries name them, and the sizes of `all_gather` / `reduce_scatter` outputs tell
//! how many members a group really has.
//!
//! The world size is the largest that any source states: the highest rank in a file name
//! (readable or not), every consistent `pg_config` list (named or not), the default group's
//! gather shapes, and `--world-size`. A claim past [`limits::MAX_WORLD_SIZE`] is refused with
//! a warning instead of sizing anything.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{limits, warn};
use crate::model::{Entry, Membership, OpKind, ProcessGroup, Trace, WarningKind, format_ranks};

/// What the caller knows about the world beyond the decoded dumps.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stated {
    /// The highest rank any file name carried, readable or not.
    pub highest_named: Option<u32>,
    /// `--world-size`.
    pub world_size: Option<u32>,
}

#[derive(Default)]
struct Seen {
    desc: FxHashMap<Arc<str>, usize>,
    ranks: Vec<u32>,
    /// Group size implied by gather/scatter shapes, the largest seen.
    implied_size: u32,
    /// Membership lists from `pg_config`, with how many ranks wrote each.
    configs: BTreeMap<Arc<[u32]>, usize>,
}

/// What the dumps' `pg_config` held, for a warning that says what was really there.
#[derive(Default)]
struct ConfigShapes {
    dumps_without: usize,
    unnamed_with_ranks: BTreeMap<Arc<[u32]>, usize>,
    unnamed_empty: usize,
    named_empty: usize,
}

pub fn infer(trace: &mut Trace, stated: Stated) {
    let mut groups: BTreeMap<Arc<str>, Seen> = BTreeMap::new();
    let mut shapes = ConfigShapes::default();
    let mut over_limit: Vec<String> = Vec::new();
    for dump in &trace.ranks {
        // The groups this dump names, each counted once (a set: a dump may name thousands).
        let mut named_here: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        let mut last_named: Option<&Arc<str>> = None;
        for e in &dump.entries {
            let seen = groups.entry(e.pg_name().clone()).or_default();
            if !e.pg_desc().is_empty() {
                *seen.desc.entry(e.pg_desc().clone()).or_default() += 1;
            }
            let implied = implied_group_size(e);
            if implied > limits::MAX_WORLD_SIZE {
                over_limit.push(format!(
                    "an {} on pg {} implies {implied} members",
                    e.op().name,
                    e.pg_name()
                ));
            } else {
                seen.implied_size = seen.implied_size.max(implied);
            }
            if last_named != Some(e.pg_name()) {
                last_named = Some(e.pg_name());
                if named_here.insert(&**e.pg_name()) {
                    seen.ranks.push(dump.rank);
                }
            }
        }
        if dump.pg_config.is_empty() {
            shapes.dumps_without += 1;
        }
        for cfg in &dump.pg_config {
            if let Some(&top) = cfg.ranks.last()
                && top > limits::MAX_RANK
            {
                over_limit.push(format!("pg_config of {} lists rank {top}", dump.path.display()));
                continue;
            }
            match (cfg.name.is_empty(), cfg.ranks.is_empty()) {
                (true, true) => shapes.unnamed_empty += 1,
                (false, true) => shapes.named_empty += 1,
                (true, false) => {
                    *shapes.unnamed_with_ranks.entry(cfg.ranks.clone()).or_default() += 1;
                }
                (false, false) => {
                    let seen = groups.entry(cfg.name.clone()).or_default();
                    // Lists are sorted and shared when loaded: counting is by key, without a copy.
                    *seen.configs.entry(cfg.ranks.clone()).or_default() += 1;
                    if !cfg.desc.is_empty() {
                        *seen.desc.entry(cfg.desc.clone()).or_default() += 1;
                    }
                }
            }
        }
    }
    over_limit.sort();
    over_limit.dedup();
    for claim in over_limit.iter().take(5) {
        let message =
            format!("{claim}, above the limit of {} ranks; ignored", limits::MAX_WORLD_SIZE);
        trace.warnings.push(warn(WarningKind::Membership, None, None, message));
    }

    let world = world_size(trace, &groups, &shapes, stated);
    trace.world_size = world;

    let mut broken_config = Vec::new();
    let mut slots = 0usize;
    for (name, seen) in groups {
        let desc = seen.desc.iter().max_by_key(|(d, n)| (**n, d.len())).map(|(d, _)| d.clone());
        let desc = desc.unwrap_or_else(|| Arc::from(""));
        let (mut members, mut membership) = if let Some(members) = majority_config(&seen.configs) {
            if seen.configs.len() > 1 {
                let message = format!(
                    "pg {name}: ranks disagree on its members in pg_config; using the most common list ({})",
                    format_ranks(&members)
                );
                trace.warnings.push(warn(WarningKind::Membership, None, None, message));
            }
            (members, Membership::PgConfig)
        } else if is_default(&name, &seen) {
            broken_config.push(name.clone());
            // Filled in below, once the member budget allows it.
            (Vec::new(), Membership::InferredWorld)
        } else {
            broken_config.push(name.clone());
            let mut ranks = seen.ranks.clone();
            ranks.sort_unstable();
            if seen.implied_size as usize > ranks.len() {
                let message = format!(
                    "pg {name}: its collectives' shapes imply {} members but only rank(s) {} mention it; \
                     the others may be missing",
                    seen.implied_size,
                    format_ranks(&ranks)
                );
                trace.warnings.push(warn(WarningKind::Membership, None, None, message));
            }
            if let [only] = ranks[..]
                && world > 1
                && never_completed_alone(trace, only, &name)
            {
                let message = format!(
                    "pg {name}: only rank {only} mentions it, but its collective there never \
                     completed, which a one-member group's would; assuming it spans the world"
                );
                trace.warnings.push(warn(WarningKind::Membership, None, None, message));
                (Vec::new(), Membership::AssumedWorld)
            } else {
                (ranks, Membership::InferredFromEntries)
            }
        };
        // Many groups that each span a huge world (a hostile dump naming thousands of groups
        // "default_pg") would multiply the world by the groups: past the budget, a group keeps
        // the ranks whose entries name it.
        let size = if spans_world(membership) { world as usize } else { members.len() };
        if slots + size > limits::MAX_MEMBER_SLOTS {
            let mut ranks = seen.ranks.clone();
            ranks.sort_unstable();
            let message = format!(
                "pg {name}: {size} members would take the job past {} listed members in all; using the {} rank(s) whose entries name it",
                limits::MAX_MEMBER_SLOTS,
                ranks.len()
            );
            trace.warnings.push(warn(WarningKind::Membership, None, None, message));
            (members, membership) = (ranks, Membership::InferredFromEntries);
        } else if spans_world(membership) {
            members = (0..world).collect();
        }
        slots += members.len();
        trace.process_groups.push(ProcessGroup { name, desc, members, membership });
    }
    if !broken_config.is_empty() {
        let names: Vec<&str> = broken_config.iter().map(|n| &**n).collect();
        let message = format!(
            "pg_config does not list the members of group(s) {} ({}); members inferred from the entries and a world size of {world}",
            names.join(", "),
            shapes.describe(trace.ranks.len())
        );
        trace.warnings.push(warn(WarningKind::Membership, None, None, message));
    }
    trace.process_groups.sort_by(|a, b| natural_key(&a.name).cmp(&natural_key(&b.name)));
    trace.missing_ranks = (0..world).filter(|r| trace.rank(*r).is_none()).collect();
}

fn spans_world(membership: Membership) -> bool {
    matches!(membership, Membership::InferredWorld | Membership::AssumedWorld)
}

/// The largest world any source states, each claim checked against the limit.
fn world_size(
    trace: &mut Trace,
    groups: &BTreeMap<Arc<str>, Seen>,
    shapes: &ConfigShapes,
    stated: Stated,
) -> u32 {
    let loaded = trace.ranks.iter().map(|r| r.rank).max().unwrap_or(0);
    let from_files = loaded.max(stated.highest_named.unwrap_or(0)) + 1;
    let mut world = from_files;
    // The size some record states for the whole world, beyond the files found.
    let mut recorded = 0u32;
    for (name, seen) in groups {
        if let Some(members) = majority_config(&seen.configs) {
            world = world.max(members.last().map_or(0, |r| r + 1));
            if is_default(name, seen) {
                recorded = recorded.max(members.len() as u32);
            }
        }
        if is_default(name, seen) {
            world = world.max(seen.implied_size);
            recorded = recorded.max(seen.implied_size);
        }
    }
    // An unnamed list (Gloo's default group) still says how many ranks there were.
    if let Some(members) = majority_config(&shapes.unnamed_with_ranks) {
        world = world.max(members.last().map_or(0, |r| r + 1));
        recorded = recorded.max(members.len() as u32);
    }
    trace.world_stated = recorded >= world
        || stated.world_size.is_some_and(|n| n <= limits::MAX_WORLD_SIZE && n >= world);
    match stated.world_size {
        Some(n) if n > limits::MAX_WORLD_SIZE => {
            let message = format!(
                "--world-size {n} is above the limit of {} ranks; ignored",
                limits::MAX_WORLD_SIZE
            );
            trace.warnings.push(warn(WarningKind::Membership, None, None, message));
        }
        Some(n) if n < world => {
            let message = format!(
                "--world-size {n}, but the dumps show a world of at least {world} (ranks in file names, pg_config, gather shapes); using {world}"
            );
            trace.warnings.push(warn(WarningKind::Membership, None, None, message));
        }
        Some(n) => world = n,
        None => {}
    }
    world
}

impl ConfigShapes {
    /// What `pg_config` held across the dumps, in words: "name \"\" with ranks [0-3] (4 dumps)".
    fn describe(&self, dumps: usize) -> String {
        let mut parts = Vec::new();
        for (ranks, n) in &self.unnamed_with_ranks {
            parts.push(format!(
                "an item with name \"\" and ranks [{}] in {n} of {dumps} dump(s), as Gloo in torch 2.11 writes for the default group",
                format_ranks(ranks)
            ));
        }
        if self.unnamed_empty > 0 {
            parts.push(format!(
                "{} item(s) with name \"\" and ranks \"[]\", as Gloo in torch 2.11 writes once sub-groups exist",
                self.unnamed_empty
            ));
        }
        if self.named_empty > 0 {
            parts.push(format!("{} named item(s) with no ranks", self.named_empty));
        }
        if self.dumps_without > 0 {
            parts.push(format!("no pg_config in {} of {dumps} dump(s)", self.dumps_without));
        }
        if parts.is_empty() {
            parts.push("no item for them".into());
        }
        format!("found: {}", parts.join("; "))
    }
}

/// Whether `rank`'s `pg_status` says its last collective on group `name` is still pending.
/// A group whose members are unknown (no usable `pg_config`) and which only one rank's
/// entries name looks like a one-member group, but a one-member collective completes at once:
/// a pending one proves the group has members that never issued it (a rank that called a
/// metrics collective nobody else did, for instance).
fn never_completed_alone(trace: &Trace, rank: u32, name: &str) -> bool {
    let Some(dump) = trace.rank(rank) else { return false };
    let Some(pg_id) = dump.entries.iter().rev().find(|e| &**e.pg_name() == name).map(Entry::pg_id)
    else {
        return false;
    };
    dump.pg_status.iter().any(|s| {
        s.pg_id == pg_id
            && s.last_enqueued.is_some()
            && s.last_completed.is_none_or(|done| Some(done) < s.last_enqueued)
    })
}

fn majority_config(configs: &BTreeMap<Arc<[u32]>, usize>) -> Option<Vec<u32>> {
    configs.iter().max_by_key(|(_, n)| **n).map(|(m, _)| m.to_vec())
}

fn is_default(name: &str, seen: &Seen) -> bool {
    name == "0" || seen.desc.contains_key("default_pg")
}

/// Group size implied by one entry's shapes: an `all_gather`'s output holds one input per member
/// (as a list of tensors or stacked in one), a `reduce_scatter`'s input likewise. Saturates at
/// `u32::MAX`, which the caller refuses as past the limit.
fn implied_group_size(e: &crate::model::Entry) -> u32 {
    let numel = |shape: &[i64]| shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d));
    let (one, all) = match e.op().kind {
        OpKind::AllGather => (e.input_sizes(), e.output_sizes()),
        OpKind::ReduceScatter => (e.output_sizes(), e.input_sizes()),
        _ => return 0,
    };
    if all.len() > 1 && one.len() == 1 {
        return u32::try_from(all.len()).unwrap_or(u32::MAX);
    }
    match (one.first().and_then(|s| numel(s)), all.first().and_then(|s| numel(s))) {
        (Some(one), Some(all)) if one > 0 && all > 0 && all % one == 0 => {
            u32::try_from(all / one).unwrap_or(u32::MAX)
        }
        _ => 0,
    }
}

/// Sorts "2" before "10" and numeric names before hash-like ones.
fn natural_key(name: &str) -> (u8, u64, &str) {
    match name.parse::<u64>() {
        Ok(n) => (0, n, name),
        Err(_) => (1, 0, name),
    }
}
