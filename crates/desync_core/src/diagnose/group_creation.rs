//! Process groups created on some ranks only. `new_group` (and everything built on it:
//! `new_subgroups`, a device mesh) is entered by every rank of the default group, members of
//! the new group or not, unless it is called with `use_local_synchronization=True`: the
//! group's name is the next value of a per-process counter, so a rank that skips one call
//! gives every later group a different name than its peers do, and the next group created
//! on every rank hangs in its store rendezvous, which Flight Recorder never records. Every
//! recorded collective can then agree and complete: the set reads healthy.
//!
//! Two records show the skip, each from the rank's own dump:
//!
//! - a rank recorded collectives on a sub-group named by that counter (a decimal number other
//!   than the default group's "0"; a group made with local synchronization gets a hashed
//!   name and is left out): it entered `new_group`;
//! - a rank's `pg_config` is the one unnamed item listing the whole world: Gloo (torch 2.11)
//!   writes that while the default group is the only group the process created, and an item
//!   with ranks "[]" once it created a sub-group (`load/groups.rs`): it never entered one.
//!
//! Ranks of both kinds in one set: the first kind entered a `new_group` the second never did.

use crate::model::{RankDump, RankSet, Trace};

/// The ranks that created a counter-named sub-group and the ranks whose records say they
/// created none, with the sub-groups' names; `None` unless both sides have ranks.
pub struct UnevenCreation {
    pub created: RankSet,
    pub never: RankSet,
    pub names: Vec<String>,
}

pub fn uneven_creation(trace: &Trace, world: u32) -> Option<UnevenCreation> {
    let mut names: Vec<String> = Vec::new();
    let mut created = Vec::new();
    let mut never = Vec::new();
    for dump in &trace.ranks {
        let counted = counted_sub_groups(dump);
        if !counted.is_empty() {
            created.push(dump.rank);
            for n in counted {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        } else if only_default_group(dump, world) {
            never.push(dump.rank);
        }
    }
    if created.is_empty() || never.is_empty() {
        return None;
    }
    names.sort_by_key(|n| n.parse::<u64>().unwrap_or(u64::MAX));
    Some(UnevenCreation { created: RankSet::new(created), never: RankSet::new(never), names })
}

/// Names of the sub-groups this rank issued collectives on whose name is the creation
/// counter's (decimal, not the default group's "0").
fn counted_sub_groups(dump: &RankDump) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in &dump.entries {
        let name = e.pg_name();
        let counted = !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit());
        if counted && &**name != "0" && !out.iter().any(|n| n == &**name) {
            out.push(name.to_string());
        }
    }
    out
}

/// Whether the rank's `pg_config` says the default group is the only group it created: one
/// unnamed item listing every rank of the world (Gloo, torch 2.11).
fn only_default_group(dump: &RankDump, world: u32) -> bool {
    match dump.pg_config.as_slice() {
        [only] => {
            only.name.is_empty()
                && world > 1
                && only.ranks.len() == world as usize
                && only.ranks.iter().copied().eq(0..world)
        }
        _ => false,
    }
}
