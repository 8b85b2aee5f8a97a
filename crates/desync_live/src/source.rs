//! Where snapshots come from: a live job's debug-server workers (found through its `TCPStore`,
//! or listed by hand), or a directory of dumps that a job rewrites.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use desync_core::load::{LoadOptions, Loader};
use desync_core::model::Trace;

use crate::store::{StoreClient, StoreError};
use crate::workers::{self, Detail, Recorder, Worker};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "no debug-server workers registered in the store at {0} yet (keys `debug_server/rank<N>`: does the job call torch.distributed.debug.start_debug_server()?)"
    )]
    NoWorkers(String),
    #[error("no worker answered ({count} tried; first: rank {rank}: {first})")]
    AllDown { count: usize, rank: u32, first: String },
    #[error("{0}")]
    Load(#[from] desync_core::Error),
}

// One snapshot exists per poll and is consumed at once; boxing the trace would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Snapshot {
    /// Nothing changed since the last snapshot (a dump directory not rewritten).
    Unchanged,
    Taken {
        trace: Trace,
        /// Ranks the source knows of (registered workers, files).
        expected: usize,
        /// Ranks that did not answer, with why.
        unreachable: Vec<(u32, String)>,
        /// Among them, the ranks whose worker was reached but did not answer in time: busy or
        /// slow, not gone, so their missing dump is no evidence of a crash.
        slow: Vec<u32>,
        /// Whether some ranks answered with their active entries only ([`Detail::Active`]).
        active_only: bool,
        /// Bytes fetched or read for this snapshot.
        bytes: u64,
    },
}

pub trait Source {
    /// Names the source in reports (the store address, the directory).
    fn input(&self) -> PathBuf;
    /// A snapshot with at most `detail`: sources that cannot fetch less take everything.
    fn snapshot(&mut self, detail: Detail) -> Result<Snapshot, SourceError>;
    /// Every rank's Python stacks, when the source can get them (live workers only).
    fn tracebacks(&mut self) -> BTreeMap<u32, String>;
    /// Each rank's dump as raw bytes, with its rank and a file name that keeps the rank.
    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)>;
}

/// A live job's workers.
pub struct Live {
    store: Option<StoreSettings>,
    workers: Vec<Worker>,
    recorders: Mutex<BTreeMap<u32, Recorder>>,
    timeout: Duration,
    concurrency: usize,
    last_discovery: Option<Instant>,
    /// Whether the last snapshot's recorders showed no rank without a registered worker.
    complete: bool,
    /// When the last whole snapshot was taken.
    last_full: Option<Instant>,
}

struct StoreSettings {
    addr: String,
    world_size: Option<u32>,
}

/// Active-only snapshots miss what already completed: two ranks that issued different
/// collectives which both completed (a latent mismatch that has not hung yet). A whole
/// snapshot at least this often still catches those.
const FULL_AT_LEAST_EVERY: Duration = Duration::from_secs(30);

/// Workers register when their rank reaches `start_debug_server`, and a restarted job
/// registers new ports: look again this often, and at once when every worker is down.
const REDISCOVER_EVERY: Duration = Duration::from_secs(30);
/// While the recorders name ranks that registered no worker yet (ranks start a few seconds
/// apart, and a watch started with the job finds the early ones first), look again this often.
const REDISCOVER_INCOMPLETE: Duration = Duration::from_secs(2);

impl Live {
    pub fn from_store(
        addr: String,
        world_size: Option<u32>,
        timeout: Duration,
        concurrency: usize,
    ) -> Self {
        Self::new(Some(StoreSettings { addr, world_size }), Vec::new(), timeout, concurrency)
    }

    pub fn from_workers(workers: Vec<Worker>, timeout: Duration, concurrency: usize) -> Self {
        Self::new(None, workers, timeout, concurrency)
    }

    fn new(
        store: Option<StoreSettings>,
        workers: Vec<Worker>,
        timeout: Duration,
        concurrency: usize,
    ) -> Self {
        Self {
            store,
            workers,
            recorders: Mutex::default(),
            timeout,
            concurrency,
            last_discovery: None,
            complete: true,
            last_full: None,
        }
    }

    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    fn rediscover_if_due(&mut self) -> Result<(), SourceError> {
        let Some(store) = &self.store else { return Ok(()) };
        let period = if self.complete { REDISCOVER_EVERY } else { REDISCOVER_INCOMPLETE };
        let due =
            self.workers.is_empty() || self.last_discovery.is_none_or(|t| t.elapsed() >= period);
        if !due {
            return Ok(());
        }
        // Counted from the attempt, so a store that is gone costs one timeout per period, not
        // one per snapshot.
        self.last_discovery = Some(Instant::now());
        let mut client = StoreClient::connect(&store.addr, self.timeout)?;
        let found = workers::discover(&mut client, store.world_size)?;
        if found.is_empty() {
            return Err(SourceError::NoWorkers(store.addr.clone()));
        }
        if found != self.workers {
            // New ports: a restarted job. What we learned about its recorders is stale.
            workers::lock(&self.recorders).clear();
            self.workers = found;
        }
        Ok(())
    }
}

impl Source for Live {
    fn input(&self) -> PathBuf {
        match &self.store {
            Some(s) => PathBuf::from(format!("tcpstore://{}", s.addr)),
            None => PathBuf::from("debug-server workers"),
        }
    }

    fn snapshot(&mut self, detail: Detail) -> Result<Snapshot, SourceError> {
        if let Err(e) = self.rediscover_if_due() {
            // The store can go away (its host rank died, the agent restarted) while the workers
            // still answer: keep polling them; without any, there is nothing to poll.
            if self.workers.is_empty() {
                return Err(e);
            }
        }
        let full_due = self.last_full.is_none_or(|t| t.elapsed() >= FULL_AT_LEAST_EVERY);
        let detail = if full_due { Detail::Full } else { detail };
        let loader = Loader::default();
        let unreachable = Mutex::new(Vec::new());
        let slow = Mutex::new(Vec::new());
        let active_only = AtomicBool::new(false);
        let bytes = AtomicU64::new(0);
        let (workers, recorders) = (&self.workers, &self.recorders);
        workers::fetch_all(
            workers,
            recorders,
            detail,
            self.timeout,
            self.concurrency,
            &|f| match f.result {
                Ok(body) => {
                    bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                    if f.active_only {
                        active_only.store(true, Ordering::Relaxed);
                    }
                    loader.add(f.source, Some(f.rank), &body);
                }
                Err(e) => {
                    if e.is_slow() {
                        workers::lock(&slow).push(f.rank);
                    }
                    workers::lock(&unreachable).push((f.rank, e.to_string()));
                }
            },
        );
        let mut slow = workers::into_inner(slow);
        slow.sort_unstable();
        let mut unreachable = workers::into_inner(unreachable);
        if unreachable.len() == self.workers.len() && !self.workers.is_empty() {
            unreachable.sort_unstable();
            let (rank, first) = unreachable.swap_remove(0);
            // Every worker gone: a restarted job may be registering new ones.
            if self.store.is_some() {
                self.last_discovery = None;
            }
            return Err(SourceError::AllDown { count: self.workers.len(), rank, first });
        }
        unreachable.sort_unstable();
        let trace = loader.finish(&self.input(), Vec::new())?;
        // The recorders know the world (process-group members, gather shapes): ranks in it
        // with no worker have not registered yet, or died before they could.
        let world = trace.world_size as usize;
        self.complete = world <= self.workers.len();
        let active_only = active_only.into_inner();
        if !active_only {
            self.last_full = Some(Instant::now());
        }
        Ok(Snapshot::Taken {
            trace,
            expected: world.max(self.workers.len()),
            unreachable,
            slow,
            active_only,
            bytes: bytes.into_inner(),
        })
    }

    fn tracebacks(&mut self) -> BTreeMap<u32, String> {
        workers::fetch_tracebacks(&self.workers, self.timeout, self.concurrency)
    }

    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)> {
        let out = Mutex::new(Vec::new());
        let (workers, recorders) = (&self.workers, &self.recorders);
        workers::fetch_all(
            workers,
            recorders,
            Detail::Full,
            self.timeout,
            self.concurrency,
            &|f| {
                if let Ok(bytes) = f.result {
                    let extension = if bytes.first() == Some(&0x80) { "pkl" } else { "json" };
                    let name = format!("rank_{}.{extension}", f.rank);
                    workers::lock(&out).push((f.rank, name, bytes));
                }
            },
        );
        workers::into_inner(out)
    }
}

/// A directory a job rewrites with fresh dumps (FR's pipe trigger, or
/// `python -m desync_jobs.periodic_dump`). Reloaded when any file in it changes.
pub struct Directory {
    dir: PathBuf,
    load: LoadOptions,
    seen: Option<Vec<(PathBuf, SystemTime, u64)>>,
}

impl Directory {
    pub fn new(dir: PathBuf, load: LoadOptions) -> Self {
        Self { dir, load, seen: None }
    }

    /// Names, modification times and sizes of the files the loader would read (the same
    /// recursive listing): cheap to take, and any rewrite changes it.
    fn fingerprint(&self) -> std::io::Result<Vec<(PathBuf, SystemTime, u64)>> {
        desync_core::load::walk(&self.dir)?
            .into_iter()
            .map(|path| {
                let meta = std::fs::metadata(&path)?;
                Ok((path, meta.modified()?, meta.len()))
            })
            .collect()
    }
}

impl Source for Directory {
    fn input(&self) -> PathBuf {
        self.dir.clone()
    }

    fn snapshot(&mut self, _: Detail) -> Result<Snapshot, SourceError> {
        let fingerprint = self.fingerprint().map_err(|source| {
            SourceError::Load(desync_core::Error::Io { path: self.dir.clone(), source })
        })?;
        if self.seen.as_ref() == Some(&fingerprint) {
            return Ok(Snapshot::Unchanged);
        }
        let trace = desync_core::load::load(&self.dir, &self.load, &desync_core::NoProgress)?;
        let bytes = fingerprint.iter().map(|(_, _, len)| len).sum();
        self.seen = Some(fingerprint);
        let expected = trace.ranks.len() + trace.missing_ranks.len();
        Ok(Snapshot::Taken {
            trace,
            expected,
            unreachable: Vec::new(),
            slow: Vec::new(),
            active_only: false,
            bytes,
        })
    }

    fn tracebacks(&mut self) -> BTreeMap<u32, String> {
        BTreeMap::new()
    }

    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)> {
        let Ok(files) = self.fingerprint() else { return Vec::new() };
        files
            .into_iter()
            .filter_map(|(path, ..)| {
                let name = path.file_name()?.to_str()?.to_owned();
                let (_, rank) = desync_core::load::split_rank(&name)?;
                let limit = desync_core::load::limits::MAX_DUMP_BYTES;
                Some((rank, name, desync_core::load::read_regular(&path, limit).ok()?))
            })
            .collect()
    }
}
