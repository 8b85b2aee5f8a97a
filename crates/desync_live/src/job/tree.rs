//! The job's process tree: the process desync started and everything it started since,
//! including processes that left the job's process group or session (`setsid`) and orphans
//! whose parent died.
//!
//! A process group alone is not enough: a worker that calls `setsid()` (or `setpgid`) leaves
//! it, and a signal to the group no longer reaches it. So on Linux desync becomes a child
//! subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): an orphan of the job is re-parented to desync
//! instead of init, and stays findable through `/proc/<pid>/stat`'s parent chains. A member is
//! a process descending from the job's first process, or from desync itself (desync starts
//! no other process while a job runs), or seen as a member before, or in the job's process
//! group. Members are told apart from a later process that reuses the pid by their start time.
//!
//! Elsewhere (no `/proc`, no subreaper), the tree is just the job's process group.

use std::collections::BTreeSet;

use rustix::process::{Pid, Signal};

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    pid: i32,
    parent: i32,
    group: i32,
    /// Clock ticks since boot when it started: a reused pid has another.
    started: u64,
    /// A zombie has exited and only waits to be reaped.
    zombie: bool,
}

pub(super) struct Tree {
    root: i32,
    /// The `desync run` process: its children are the job's (it starts no other while the
    /// job runs, except the guard, which is spared). `None` once it is gone (its pid may be
    /// reused).
    desync: Option<i32>,
    /// Never members: desync itself and its job guard.
    spared: Vec<i32>,
    /// Every member seen so far, by (pid, start time).
    members: BTreeSet<(i32, u64)>,
}

impl Tree {
    /// The tree under `root`, the job's first process (the leader of its process group), as
    /// the `desync run` process that started it sees it.
    pub(super) fn new(root: u32) -> Self {
        let desync = rustix::process::getpid().as_raw_nonzero().get();
        Self::of(root, desync, vec![desync])
    }

    /// The tree of a job that process `desync` started, as another process (the guard) sees it.
    pub(super) fn of(root: u32, desync: i32, spared: Vec<i32>) -> Self {
        let root = i32::try_from(root).unwrap_or(i32::MAX);
        Self { root, desync: Some(desync), spared, members: BTreeSet::new() }
    }

    /// Never counts `pid` as a member (the guard, a child of desync but not the job's).
    pub(super) fn spare(&mut self, pid: u32) {
        self.spared.push(i32::try_from(pid).unwrap_or(i32::MAX));
    }

    /// The process that started the job is gone: its pid no longer says anything (a new
    /// process may get it); the members seen so far and their descendants still do.
    pub(super) fn starter_gone(&mut self) {
        self.desync = None;
    }

    /// Makes desync the reaper of the job's orphans (Linux). Called before the job starts, so
    /// that not even its first orphan escapes to init.
    pub(super) fn adopt_orphans() {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    }

    /// Looks again: the members that are still running (not the job's first process, which
    /// its `Child` handle waits for), after reaping the adopted members that exited.
    pub(super) fn living(&mut self) -> Vec<i32> {
        let found = self.scan();
        found.iter().filter(|e| !e.zombie && e.pid != self.root).map(|e| e.pid).collect()
    }

    /// Every member still running, the job's first process included (the guard has no
    /// `Child` handle for it).
    pub(super) fn all_living(&mut self) -> Vec<i32> {
        self.scan().iter().filter(|e| !e.zombie).map(|e| e.pid).collect()
    }

    fn scan(&mut self) -> Vec<Entry> {
        let entries = processes();
        let spared = |pid: i32| self.spared.contains(&pid);
        // The job's first process is a child of desync, like every adopted orphan.
        let mut found: Vec<Entry> = entries
            .iter()
            .filter(|e| {
                Some(e.parent) == self.desync
                    || e.group == self.root
                    || self.members.contains(&(e.pid, e.started))
            })
            .filter(|e| !spared(e.pid))
            .copied()
            .collect();
        let mut frontier: Vec<i32> = found.iter().map(|e| e.pid).collect();
        // Descendants, by parent chains (a process's children may list before it).
        while let Some(parent) = frontier.pop() {
            for e in entries.iter().filter(|e| e.parent == parent && !spared(e.pid)) {
                if !found.iter().any(|f| f.pid == e.pid) {
                    found.push(*e);
                    frontier.push(e.pid);
                }
            }
        }
        self.members.extend(found.iter().map(|e| (e.pid, e.started)));
        for e in
            found.iter().filter(|e| e.zombie && Some(e.parent) == self.desync && e.pid != self.root)
        {
            // An adopted member that exited: reap it, or it stays a zombie until desync exits.
            // (In the guard these are no children of its own: ECHILD, nothing happens.)
            if let Some(pid) = Pid::from_raw(e.pid) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
        found
    }

    /// Sends `signal` to the job's process group and to every living member; returns the
    /// members it reached (the first process is reached through the group).
    pub(super) fn signal(&mut self, signal: Signal) -> Vec<i32> {
        if let Some(group) = Pid::from_raw(self.root) {
            // ESRCH: the group is empty; its members that left it are signalled below.
            let _ = rustix::process::kill_process_group(group, signal);
        }
        let living = self.living();
        for pid in living.iter().filter_map(|&p| Pid::from_raw(p)) {
            let _ = rustix::process::kill_process(pid, signal);
        }
        living
    }
}

/// Every process `/proc` lists (none where there is no `/proc`).
fn processes() -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|d| {
            let pid: i32 = d.file_name().to_str()?.parse().ok()?;
            // Gone in between: not a member any more.
            let stat = std::fs::read_to_string(d.path().join("stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid pgrp session ...`, `starttime` 22nd. The command
/// name may hold spaces and parentheses, so fields are counted after its last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<Entry> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field N is fields[N - 3].
    Some(Entry {
        pid,
        zombie: matches!(*fields.first()?, "Z" | "X"),
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 90 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 100 18446744073709551615";
        let e = parse_stat(4242, line).unwrap();
        assert_eq!((e.parent, e.group, e.started, e.zombie), (17, 4242, 987_654, false));
        let zombie = "7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert!(parse_stat(7, zombie).unwrap().zombie);
        assert!(parse_stat(7, "7 (cut").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_reads_as_its_own_parents_child() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let entry = processes().into_iter().find(|e| e.pid == me).expect("/proc lists us");
        let parent = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
        assert_eq!(entry.parent, parent);
        assert!(!entry.zombie);
    }
}
