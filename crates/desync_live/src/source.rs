//! Where snapshots come from: a live job's debug-server workers (found through its `TCPStore`,
//! or listed by hand), or a directory of dumps that a job rewrites.

use std::collections::{BTreeMap, HashSet};
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

/// How a snapshot was read, beside the trace itself: what the watch needs to weigh it.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Ranks the source knows of (registered workers, files).
    pub expected: usize,
    /// Ranks that did not answer, with why.
    pub unreachable: Vec<(u32, String)>,
    /// Among them, the ranks whose worker was reached but did not answer in time: busy or
    /// slow, not gone, so their missing dump is no evidence of a crash.
    pub slow: Vec<u32>,
    /// Whether some ranks answered with their active entries only ([`Detail::Active`]).
    pub active_only: bool,
    /// For a confirmation ([`Source::confirm`]) that read only some ranks whole: how many.
    /// The others kept what the poll before it read.
    pub confirmed: Option<usize>,
    /// Bytes fetched or read for this snapshot.
    pub bytes: u64,
    /// When each rank's recorder was written, where ranks were read far apart in time: a
    /// directory's files, each written at its own moment (per-node agents, a job's own
    /// dumps). Empty for a poll, which fetches every rank at once.
    pub written_at: BTreeMap<u32, SystemTime>,
}

// One snapshot exists per poll and is consumed at once; boxing the trace would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Snapshot {
    /// Nothing changed since the last snapshot (a dump directory not rewritten).
    Unchanged,
    Taken {
        trace: Trace,
        reading: Reading,
    },
}

pub trait Source {
    /// Names the source in reports (the store address, the directory).
    fn input(&self) -> PathBuf;
    /// A snapshot with at most `detail`: sources that cannot fetch less take everything.
    fn snapshot(&mut self, detail: Detail) -> Result<Snapshot, SourceError>;
    /// A snapshot to decide an alert on: whole recorders of `ranks` (the ones the finding is
    /// about) beside what the last poll read of the others. Sources that cannot fetch some
    /// ranks alone take everything whole.
    fn confirm(&mut self, ranks: &[u32]) -> Result<Snapshot, SourceError> {
        let _ = ranks;
        self.snapshot(Detail::Full)
    }
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
    /// When the last whole snapshot was taken, and how long until the next is due.
    last_full: Option<Instant>,
    full_every: Duration,
    /// The last poll, when it was an active one small enough to keep.
    last_poll: Option<LastPoll>,
    /// Only these ranks' workers (an agent's share of a large job); `None`: every rank.
    only: Option<Vec<u32>>,
}

struct StoreSettings {
    addr: String,
    world_size: Option<u32>,
}

/// Active-only snapshots miss what already completed: two ranks that issued different
/// collectives which both completed (a latent mismatch that has not hung yet). A whole
/// snapshot at least this often still catches those (less often on jobs so large that a
/// whole poll takes more than a tenth of this).
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
            full_every: FULL_AT_LEAST_EVERY,
            last_poll: None,
            only: None,
        }
    }

    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    /// Polls only these ranks' workers (sorted or not), wherever they were found.
    #[must_use]
    pub fn only_ranks(mut self, mut ranks: Vec<u32>) -> Self {
        ranks.sort_unstable();
        ranks.dedup();
        self.workers.retain(|w| ranks.binary_search(&w.rank).is_ok());
        self.only = Some(ranks);
        self
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
        let mut found = workers::discover(&mut client, store.world_size)?;
        if let Some(only) = &self.only {
            found.retain(|w| only.binary_search(&w.rank).is_ok());
        }
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

    /// Fetches `workers`' recorders at `detail`, handing each answer to `each` as it arrives
    /// (so it can be decoded and dropped).
    fn fetch(
        &self,
        workers: &[Worker],
        detail: Detail,
        each: &(dyn Fn(u32, PathBuf, Vec<u8>) + Sync),
    ) -> Fetch {
        let unreachable = Mutex::new(Vec::new());
        let slow = Mutex::new(Vec::new());
        let active_only = AtomicBool::new(false);
        let bytes = AtomicU64::new(0);
        let each_fetched = |f: workers::Fetched| match f.result {
            Ok(body) => {
                bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                if f.active_only {
                    active_only.store(true, Ordering::Relaxed);
                }
                each(f.rank, f.source, body);
            }
            Err(e) => {
                if e.is_slow() {
                    workers::lock(&slow).push(f.rank);
                }
                workers::lock(&unreachable).push((f.rank, e.to_string()));
            }
        };
        let recorders = &self.recorders;
        workers::fetch_all(
            workers,
            recorders,
            detail,
            self.timeout,
            self.concurrency,
            &each_fetched,
        );
        let mut slow = workers::into_inner(slow);
        slow.sort_unstable();
        let mut unreachable = workers::into_inner(unreachable);
        unreachable.sort_unstable();
        Fetch {
            unreachable,
            slow,
            active_only: active_only.into_inner(),
            bytes: bytes.into_inner(),
        }
    }

    /// One poll of every worker (the whole recorders when one is due, else at `detail`),
    /// handing each answer to `each` with the detail asked for.
    pub(crate) fn poll(
        &mut self,
        detail: Detail,
        each: &(dyn Fn(Detail, u32, PathBuf, Vec<u8>) + Sync),
    ) -> Result<(Detail, Fetch), SourceError> {
        if let Err(e) = self.rediscover_if_due() {
            // The store can go away (its host rank died, the agent restarted) while the workers
            // still answer: keep polling them; without any, there is nothing to poll.
            if self.workers.is_empty() {
                return Err(e);
            }
        }
        let full_due = self.last_full.is_none_or(|t| t.elapsed() >= self.full_every);
        let detail = if full_due { Detail::Full } else { detail };
        let started = Instant::now();
        let fetch = self.fetch(&self.workers, detail, &|rank, source, body| {
            each(detail, rank, source, body);
        });
        if fetch.unreachable.len() == self.workers.len() && !self.workers.is_empty() {
            self.last_poll = None;
            let (rank, first) = fetch.unreachable[0].clone();
            // Every worker gone: a restarted job may be registering new ones.
            if self.store.is_some() {
                self.last_discovery = None;
            }
            return Err(SourceError::AllDown { count: self.workers.len(), rank, first });
        }
        if !fetch.active_only {
            self.last_full = Some(Instant::now());
            // A whole poll takes long on a large job and delays every judgement behind it:
            // space them so that they take at most a tenth of the watch's time.
            self.full_every = FULL_AT_LEAST_EVERY.max(started.elapsed() * 10);
        }
        Ok((detail, fetch))
    }

    fn taken(
        &mut self,
        loader: Loader,
        fetch: Fetch,
        confirmed: Option<usize>,
    ) -> Result<Snapshot, SourceError> {
        let trace = loader.finish(&self.input(), Vec::new())?;
        // The recorders know the world (process-group members, gather shapes): ranks in it
        // with no worker have not registered yet, or died before they could.
        let world = trace.world_size as usize;
        self.complete = world <= self.workers.len();
        let reading = Reading {
            expected: world.max(self.workers.len()),
            unreachable: fetch.unreachable,
            slow: fetch.slow,
            active_only: fetch.active_only,
            confirmed,
            bytes: fetch.bytes,
            written_at: BTreeMap::new(),
        };
        Ok(Snapshot::Taken { trace, reading })
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
        let loader = Loader::default();
        let kept = Mutex::new((BTreeMap::new(), 0u64));
        let (detail, fetch) = self.poll(detail, &|detail, rank, source, body| {
            loader.add(source.clone(), Some(rank), &body);
            // Only active polls are kept: they are small, and only they can be confirmed.
            if detail == Detail::Active {
                let mut kept = workers::lock(&kept);
                kept.1 += body.len() as u64;
                if kept.1 <= KEEP_AT_MOST {
                    kept.0.insert(rank, (source, body));
                }
            }
        })?;
        let (bodies, kept_bytes) = workers::into_inner(kept);
        self.last_poll = (detail == Detail::Active && kept_bytes <= KEEP_AT_MOST).then(|| {
            LastPoll { bodies, unreachable: fetch.unreachable.clone(), slow: fetch.slow.clone() }
        });
        self.taken(loader, fetch, None)
    }

    fn confirm(&mut self, ranks: &[u32]) -> Result<Snapshot, SourceError> {
        let Some(mut poll) = self.last_poll.take() else {
            return self.snapshot(Detail::Full);
        };
        let chosen: Vec<Worker> =
            self.workers.iter().filter(|w| ranks.contains(&w.rank)).cloned().collect();
        let whole = Mutex::new(Vec::new());
        let fetch = self.fetch(&chosen, Detail::Full, &|rank, source, body| {
            workers::lock(&whole).push((rank, source, body));
        });
        let whole = workers::into_inner(whole);
        let confirmed = whole.len();
        // A chosen rank that does not answer now is missing, as in a whole snapshot (a crashed
        // culprit's worker is gone with it).
        for (rank, _) in &fetch.unreachable {
            poll.bodies.remove(rank);
        }
        for (rank, source, body) in whole {
            poll.bodies.insert(rank, (source, body));
        }
        let loader = Loader::default();
        decode_all(&loader, &poll.bodies);
        let merged = merge_fetches(&poll, fetch);
        self.last_poll = Some(poll);
        self.taken(loader, merged, Some(confirmed))
    }

    fn tracebacks(&mut self) -> BTreeMap<u32, String> {
        workers::fetch_tracebacks(&self.workers, self.timeout, self.concurrency)
    }

    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)> {
        // After a confirmation: exactly what the alert was decided on.
        if let Some(poll) = &self.last_poll {
            return poll
                .bodies
                .iter()
                .map(|(&rank, (_, body))| (rank, dump_name(rank, body), body.clone()))
                .collect();
        }
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
                    workers::lock(&out).push((f.rank, dump_name(f.rank, &bytes), bytes));
                }
            },
        );
        workers::into_inner(out)
    }
}

/// `rank_<N>.pkl` or `.json`, by what the worker served.
pub(crate) fn dump_name(rank: u32, body: &[u8]) -> String {
    let extension = if body.first() == Some(&0x80) { "pkl" } else { "json" };
    format!("rank_{rank}.{extension}")
}

/// What a fetch over some workers brought besides the bodies it handed on.
pub(crate) struct Fetch {
    pub unreachable: Vec<(u32, String)>,
    /// Among them, those reached that did not answer in time.
    pub slow: Vec<u32>,
    pub active_only: bool,
    pub bytes: u64,
}

/// The last active poll's answers, kept so that a confirmation re-reads only the ranks an
/// alert is about and takes the others from here.
struct LastPoll {
    bodies: BTreeMap<u32, (PathBuf, Vec<u8>)>,
    unreachable: Vec<(u32, String)>,
    slow: Vec<u32>,
}

/// Bytes of one poll kept at most. Active answers are a few kB per rank (about 25 kB at 4,096
/// ranks, nearly all of it `pg_config`); a poll whose workers answered whole (a handler that
/// refuses parameters) can be a GB and is not kept: its alerts are confirmed whole.
const KEEP_AT_MOST: u64 = 256 << 20;

/// The poll's unreachable and slow ranks with the confirmation's, and the confirmation's bytes.
fn merge_fetches(poll: &LastPoll, confirm: Fetch) -> Fetch {
    let mut unreachable = poll.unreachable.clone();
    unreachable.extend(confirm.unreachable);
    unreachable.sort_unstable();
    unreachable.dedup_by_key(|(rank, _)| *rank);
    let mut slow = poll.slow.clone();
    slow.extend(confirm.slow);
    slow.sort_unstable();
    slow.dedup();
    Fetch { unreachable, slow, active_only: false, bytes: confirm.bytes }
}

/// Decodes kept answers on every core: a confirmation re-reads thousands of them.
fn decode_all(loader: &Loader, bodies: &BTreeMap<u32, (PathBuf, Vec<u8>)>) {
    let bodies: Vec<_> = bodies.iter().collect();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = bodies.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in bodies.chunks(chunk) {
            scope.spawn(move || {
                for (rank, (source, body)) in part {
                    loader.add(source.clone(), Some(**rank), body);
                }
            });
        }
    });
}

/// One dump file of a [`Directory`], as listed: any rewrite changes one of these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DumpFile {
    path: PathBuf,
    modified: SystemTime,
    len: u64,
    /// The rank its name carries.
    rank: Option<u32>,
}

/// Each rank's newest file time.
fn written_at<'f>(files: impl Iterator<Item = &'f DumpFile>) -> BTreeMap<u32, SystemTime> {
    let mut times = BTreeMap::new();
    for file in files {
        let Some(rank) = file.rank else { continue };
        let newest = times.entry(rank).or_insert(file.modified);
        *newest = (*newest).max(file.modified);
    }
    times
}

/// A directory a job rewrites with fresh dumps (FR's pipe trigger, or
/// `python -m desync_jobs.periodic_dump`). Reloaded when any file in it changes.
pub struct Directory {
    dir: PathBuf,
    load: LoadOptions,
    seen: Option<Vec<DumpFile>>,
}

impl Directory {
    pub fn new(dir: PathBuf, load: LoadOptions) -> Self {
        Self { dir, load, seen: None }
    }

    /// Names, modification times and sizes of the dumps the loader would read (the same
    /// listing and selection: a writer's temporary files are not dumps): cheap to take, and
    /// any rewrite changes it. A file gone between the listing and this look (renamed over,
    /// removed with its rank) is left out; the next poll sees the directory as it is then.
    fn fingerprint(&self) -> std::io::Result<Vec<DumpFile>> {
        let listing = desync_core::load::walk(&self.dir)?.files;
        let dumps = desync_core::load::classify(listing, self.load.prefix.as_deref()).candidates;
        let mut files = Vec::with_capacity(dumps.len());
        for dump in dumps {
            match std::fs::metadata(&dump.path) {
                Ok(meta) => files.push(DumpFile {
                    path: dump.path,
                    modified: meta.modified()?,
                    len: meta.len(),
                    rank: dump.rank,
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(files)
    }
}

impl Source for Directory {
    fn input(&self) -> PathBuf {
        self.dir.clone()
    }

    fn snapshot(&mut self, _: Detail) -> Result<Snapshot, SourceError> {
        let listing =
            |source| SourceError::Load(desync_core::Error::Io { path: self.dir.clone(), source });
        let fingerprint = self.fingerprint().map_err(listing)?;
        if self.seen.as_ref() == Some(&fingerprint) {
            return Ok(Snapshot::Unchanged);
        }
        let trace = desync_core::load::load(&self.dir, &self.load, &desync_core::NoProgress)?;
        // A file rewritten while the directory was read has no known time for what was read
        // (and the next poll reads the directory again: it differs from `fingerprint`).
        let after = self.fingerprint().map_err(listing)?;
        let before: HashSet<_> = fingerprint.iter().collect();
        let written_at = written_at(after.iter().filter(|f| before.contains(f)));
        let bytes = fingerprint.iter().map(|f| f.len).sum();
        self.seen = Some(fingerprint);
        let expected = trace.ranks.len() + trace.missing_ranks.len();
        Ok(Snapshot::Taken {
            trace,
            reading: Reading { expected, bytes, written_at, ..Reading::default() },
        })
    }

    fn tracebacks(&mut self) -> BTreeMap<u32, String> {
        BTreeMap::new()
    }

    fn raw_dumps(&mut self) -> Vec<(u32, String, Vec<u8>)> {
        let Ok(files) = self.fingerprint() else { return Vec::new() };
        files
            .into_iter()
            .filter_map(|file| {
                let name = file.path.file_name()?.to_str()?.to_owned();
                let limit = desync_core::load::limits::MAX_DUMP_BYTES;
                Some((file.rank?, name, desync_core::load::read_regular(&file.path, limit).ok()?))
            })
            .collect()
    }
}
