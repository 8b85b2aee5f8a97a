//! Infers the world size and the members of each process group.
//!
//! `pg_config` is the first source, but it can be empty or wrong: Gloo in torch 2.11 writes
//! name "" and ranks "[]" for every group, and split groups can differ by rank (pytorch#189073).
//! Then membership comes from the entries: the default group ("0" / "`default_pg`") spans the
//! world, other groups span the ranks whose entries name them, and the sizes of `all_gather` /
//! `reduce_scatter` outputs tell how many members a group really has.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::warn;
use crate::model::{Entry, Membership, OpKind, ProcessGroup, Trace, WarningKind, format_ranks};

#[derive(Default)]
struct Seen {
    desc: FxHashMap<Arc<str>, usize>,
    ranks: Vec<u32>,
    /// Group size implied by gather/scatter shapes, the largest seen.
    implied_size: u32,
    /// Membership lists from `pg_config`, with how many ranks wrote each.
    configs: BTreeMap<Arc<[u32]>, usize>,
}

pub fn infer(trace: &mut Trace) {
    let mut groups: BTreeMap<Arc<str>, Seen> = BTreeMap::new();
    for dump in &trace.ranks {
        let mut named_here: Vec<&Arc<str>> = Vec::new();
        for e in &dump.entries {
            let seen = groups.entry(e.pg_name().clone()).or_default();
            if !e.pg_desc().is_empty() {
                *seen.desc.entry(e.pg_desc().clone()).or_default() += 1;
            }
            seen.implied_size = seen.implied_size.max(implied_group_size(e));
            if named_here.last() != Some(&e.pg_name()) && !named_here.contains(&e.pg_name()) {
                named_here.push(e.pg_name());
                seen.ranks.push(dump.rank);
            }
        }
        for cfg in &dump.pg_config {
            if cfg.ranks.is_empty() || cfg.name.is_empty() {
                continue;
            }
            let seen = groups.entry(cfg.name.clone()).or_default();
            // Lists are sorted and shared when loaded: counting is by key, without a copy.
            *seen.configs.entry(cfg.ranks.clone()).or_default() += 1;
            if !cfg.desc.is_empty() {
                *seen.desc.entry(cfg.desc.clone()).or_default() += 1;
            }
        }
    }

    let highest_rank = trace.ranks.iter().map(|r| r.rank).max().unwrap_or(0);
    let mut world = highest_rank + 1;
    for (name, seen) in &groups {
        if let Some(members) = majority_config(seen) {
            world = world.max(members.last().map_or(0, |r| r + 1));
        }
        if is_default(name, seen) {
            world = world.max(seen.implied_size);
        }
    }
    trace.world_size = world;

    let mut broken_config = Vec::new();
    for (name, seen) in groups {
        let desc = seen.desc.iter().max_by_key(|(d, n)| (**n, d.len())).map(|(d, _)| d.clone());
        let desc = desc.unwrap_or_else(|| Arc::from(""));
        let (members, membership) = if let Some(members) = majority_config(&seen) {
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
            ((0..world).collect(), Membership::InferredWorld)
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
                ((0..world).collect(), Membership::InferredWorld)
            } else {
                (ranks, Membership::InferredFromEntries)
            }
        };
        trace.process_groups.push(ProcessGroup { name, desc, members, membership });
    }
    if !broken_config.is_empty() {
        let names: Vec<&str> = broken_config.iter().map(|n| &**n).collect();
        let message = format!(
            "pg_config is empty or unusable for group(s) {} (Gloo in torch 2.11 writes name \"\" and ranks \"[]\"); \
             members inferred from the entries and a world size of {world}",
            names.join(", ")
        );
        trace.warnings.push(warn(WarningKind::Membership, None, None, message));
    }
    trace.process_groups.sort_by(|a, b| natural_key(&a.name).cmp(&natural_key(&b.name)));
    trace.missing_ranks = (0..world).filter(|r| trace.rank(*r).is_none()).collect();
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

fn majority_config(seen: &Seen) -> Option<Vec<u32>> {
    seen.configs.iter().max_by_key(|(_, n)| **n).map(|(m, _)| m.to_vec())
}

fn is_default(name: &str, seen: &Seen) -> bool {
    name == "0" || seen.desc.contains_key("default_pg")
}

/// Group size implied by one entry's shapes: an `all_gather`'s output holds one input per member
/// (as a list of tensors or stacked in one), a `reduce_scatter`'s input likewise.
fn implied_group_size(e: &crate::model::Entry) -> u32 {
    let numel = |shape: &[i64]| shape.iter().product::<i64>();
    let (one, all) = match e.op().kind {
        OpKind::AllGather => (e.input_sizes(), e.output_sizes()),
        OpKind::ReduceScatter => (e.output_sizes(), e.input_sizes()),
        _ => return 0,
    };
    if all.len() > 1 && one.len() == 1 {
        return all.len() as u32;
    }
    match (one.first(), all.first()) {
        (Some(one), Some(all)) if numel(one) > 0 && numel(all) % numel(one) == 0 => {
            u32::try_from(numel(all) / numel(one)).unwrap_or(0)
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
