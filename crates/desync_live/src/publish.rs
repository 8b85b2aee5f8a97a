//! Agents for jobs too large for one watcher: each polls some ranks' debug-server workers (its
//! own node's, typically) and keeps their recorders as files in one directory; a single
//! `desync watch --dir` over that directory judges the whole job (docs/watch.md, "Above one
//! watcher").
//!
//! An agent does not judge: its ranks alone would read as a job whose other ranks are missing.
//! It polls as `watch` does (active entries while the job looks healthy, whole recorders now
//! and then) and writes each answer as `rank_<N>.pkl|json`, atomically (a temporary name, then
//! a rename), so the judge never reads half a file. A rank whose worker is gone has its file
//! removed: the judge then sees that rank missing, as a watcher polling it would. A worker
//! that is only slow keeps its last file.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::source::{Live, SourceError, dump_name};
use crate::watch::Flow;
use crate::workers::{self, Detail};

#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// Where the files go; created if missing.
    pub dir: PathBuf,
    pub interval: Duration,
    /// Stop after this long; `None`: until interrupted.
    pub duration: Option<Duration>,
}

/// One poll, published.
#[derive(Debug, Clone)]
pub struct Published {
    pub at: SystemTime,
    pub took: Duration,
    /// Files written.
    pub written: usize,
    /// Whether the poll asked for active entries only.
    pub active_only: bool,
    pub bytes: u64,
    pub unreachable: Vec<(u32, String)>,
    /// Files removed because their rank's worker is gone.
    pub removed: usize,
    /// Files that could not be written, with why (the first few).
    pub write_errors: Vec<String>,
}

pub enum PublishEvent<'a> {
    Published(&'a Published),
    /// The workers could not be polled this time; the agent retries.
    SourceDown(&'a str),
}

/// Publishes until the front end says stop or the duration ends; returns the polls published.
pub fn publish(
    live: &mut Live,
    options: &PublishOptions,
    on_event: &mut dyn FnMut(PublishEvent<'_>) -> Flow,
) -> Result<usize, std::io::Error> {
    std::fs::create_dir_all(&options.dir)?;
    let started = Instant::now();
    let mut published = 0;
    loop {
        let cycle = Instant::now();
        let flow = match publish_once(live, &options.dir) {
            Ok(mut poll) => {
                published += 1;
                poll.took = cycle.elapsed();
                on_event(PublishEvent::Published(&poll))
            }
            Err(problem) => on_event(PublishEvent::SourceDown(&problem.to_string())),
        };
        if flow == Flow::Stop || options.duration.is_some_and(|d| started.elapsed() >= d) {
            return Ok(published);
        }
        std::thread::sleep(options.interval.saturating_sub(cycle.elapsed()));
    }
}

/// Errors kept per poll: one full disk would otherwise repeat the same line for every rank.
const WRITE_ERRORS_KEPT: usize = 3;

/// One poll of the agent's workers, written into `dir`.
fn publish_once(live: &mut Live, dir: &Path) -> Result<Published, SourceError> {
    let written = Mutex::new(0usize);
    let errors = Mutex::new(Vec::new());
    let (detail, fetch) = live.poll(Detail::Active, &|_, rank, _, body| {
        let name = dump_name(rank, &body);
        match write_atomically(dir, &name, &body) {
            Ok(()) => {
                *workers::lock(&written) += 1;
                // A rank that moved to the other recorder (pickle <-> JSON) must not leave its
                // older file behind: the judge would read the rank twice.
                for other in dump_names(rank).iter().filter(|n| **n != name) {
                    let _ = std::fs::remove_file(dir.join(other));
                }
            }
            Err(e) => {
                let mut errors = workers::lock(&errors);
                if errors.len() < WRITE_ERRORS_KEPT {
                    errors.push(format!("rank {rank}: {e}"));
                }
            }
        }
    })?;
    let mut removed = 0;
    for (rank, _) in &fetch.unreachable {
        if fetch.slow.binary_search(rank).is_err() {
            removed += dump_names(*rank)
                .iter()
                .filter(|name| std::fs::remove_file(dir.join(name)).is_ok())
                .count();
        }
    }
    Ok(Published {
        at: SystemTime::now(),
        took: Duration::ZERO,
        written: workers::into_inner(written),
        active_only: detail == Detail::Active && fetch.active_only,
        bytes: fetch.bytes,
        unreachable: fetch.unreachable,
        removed,
        write_errors: workers::into_inner(errors),
    })
}

/// Every name a rank's file can have ([`dump_name`]).
fn dump_names(rank: u32) -> [String; 2] {
    [dump_name(rank, &[0x80]), dump_name(rank, b"{")]
}

/// Writes `name` under `dir` through a temporary file the loader skips (`.tmp`), then renames
/// it into place: a reader sees the old file or the new one, never a part (and a FIFO planted
/// under either name never blocks the write: [`desync_core::output`]).
fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    desync_core::output::write_bytes(&dir.join(name), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        write_atomically(dir.path(), "rank_3.pkl", b"old").unwrap();
        write_atomically(dir.path(), "rank_3.pkl", b"new").unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["rank_3.pkl"], "no temporary file is left behind");
        assert_eq!(std::fs::read(dir.path().join("rank_3.pkl")).unwrap(), b"new");
    }
}
