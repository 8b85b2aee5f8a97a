//! The debug-server workers of a live job: finding them through the job's `TCPStore` and
//! fetching each rank's Flight Recorder snapshot from them, many at once.
//!
//! `torch.distributed.debug.start_debug_server()` (torch >= 2.10) starts an HTTP worker in
//! every rank and stores its address under `debug_server/rank<N>` as `http://<hostname>:<port>`.
//! Each worker answers `POST /handler/<name>`: `fr_trace_json` (the CPU-side recorder that
//! Gloo and hook-recorded backends write to), `dump_nccl_trace_pickle` (the NCCL recorder, with
//! Python frames), `dump_traceback` (every Python thread's stack, faulthandler format).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::http::{self, Endpoint, HttpError};
use crate::store::{StoreClient, StoreError};

/// The store prefix `start_debug_server` registers under (`PrefixStore("debug_server")`).
pub const STORE_PREFIX: &str = "debug_server/";

/// Ranks are probed in batches this large; discovery stops after a batch with no worker past
/// the highest rank seen (ranks register in any order, but not with gaps of a whole batch).
const PROBE_BATCH: u32 = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub rank: u32,
    /// What the rank registered (`http://vm:34433`), for reports.
    pub registered: String,
    /// Where we actually connect: the registered host, or the store's host when the
    /// registered name does not resolve from here (a container's hostname).
    pub endpoint: Endpoint,
}

/// Which recorder a worker's ranks write to; learned on the first fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorder {
    /// Not known yet: fetch both and keep the one with entries.
    Unknown,
    Cpu,
    Nccl,
    /// An NCCL recorder whose handler refused the query parameters (HTTP 400): always
    /// fetched whole.
    NcclWithoutParams,
}

impl Recorder {
    fn handlers(self) -> &'static [&'static str] {
        match self {
            Self::Unknown => &[NCCL_HANDLER, CPU_HANDLER],
            Self::Cpu => &[CPU_HANDLER],
            Self::Nccl | Self::NcclWithoutParams => &[NCCL_HANDLER],
        }
    }
}

/// How much of each recorder a snapshot fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every entry the ring buffer holds, with stack frames: what `analyze` reads.
    Full,
    /// What a judgement needs while the job looks healthy: the entries not completed yet,
    /// without frames, and `pg_status` (the last enqueued, started and completed seq per
    /// group). A few entries per rank instead of up to 2,000 with stacks.
    Active,
}

const CPU_HANDLER: &str = "fr_trace_json";
const NCCL_HANDLER: &str = "dump_nccl_trace_pickle";
/// torch's NCCL handler (`FlightRecorderCuda.cpp`, >= 2.3) takes `includecollectives`,
/// `includestacktraces` and `onlyactive` (`true`/`false`) and answers 400 to any other
/// parameter. The CPU handler `fr_trace_json` reads none in 2.10 and 2.11 (it always dumps
/// active entries only, and Gloo's entries never complete), so it is always asked plainly.
const NCCL_ACTIVE_QUERY: &str = "?onlyactive=true&includestacktraces=false";
pub const TRACEBACK_HANDLER: &str = "dump_traceback";

/// Reads `debug_server/rank<N>` for every rank that registered. `world_size` bounds the
/// probe when known.
pub fn discover(
    store: &mut StoreClient,
    world_size: Option<u32>,
) -> Result<Vec<Worker>, StoreError> {
    let store_host = store.addr().rsplit_once(':').map_or("", |(h, _)| h).to_owned();
    let mut found = Vec::new();
    let mut start = 0u32;
    loop {
        let end = match world_size {
            Some(n) => n.min(start + PROBE_BATCH),
            None => start + PROBE_BATCH,
        };
        if start >= end {
            break;
        }
        let keys: Vec<String> = (start..end).map(|r| format!("{STORE_PREFIX}rank{r}")).collect();
        let values = store.get_if_present(&keys)?;
        let before = found.len();
        for (rank, value) in (start..end).zip(values) {
            let Some(value) = value else { continue };
            let registered = String::from_utf8_lossy(&value).trim().to_owned();
            if let Ok(endpoint) = Endpoint::parse(&registered) {
                let endpoint = reachable(endpoint, &store_host);
                found.push(Worker { rank, registered, endpoint });
            }
        }
        if world_size.is_none() && found.len() == before {
            break;
        }
        start = end;
    }
    Ok(found)
}

/// The registered host name when it resolves here, else the store's host: a single-node job
/// in a container registers a hostname the watcher outside may not know.
fn reachable(endpoint: Endpoint, store_host: &str) -> Endpoint {
    use std::net::ToSocketAddrs;
    if (endpoint.host.as_str(), endpoint.port)
        .to_socket_addrs()
        .is_ok_and(|mut a| a.next().is_some())
        || store_host.is_empty()
    {
        endpoint
    } else {
        Endpoint {
            host: store_host.trim_start_matches('[').trim_end_matches(']').into(),
            ..endpoint
        }
    }
}

/// `--workers` values: `RANK=URL` or a bare URL, which takes its position as the rank.
pub fn parse_workers(values: &[String]) -> Result<Vec<Worker>, HttpError> {
    values
        .iter()
        .enumerate()
        .map(|(position, value)| {
            let (rank, url) = match value.split_once('=') {
                Some((rank, url)) if rank.parse::<u32>().is_ok() => {
                    (rank.parse().unwrap_or(position as u32), url)
                }
                _ => (position as u32, value.as_str()),
            };
            let endpoint = Endpoint::parse(url)?;
            Ok(Worker { rank, registered: url.to_owned(), endpoint })
        })
        .collect()
}

/// One rank's answer.
pub struct Fetched {
    pub rank: u32,
    /// A URL naming what was fetched, used as the dump's path in reports.
    pub source: PathBuf,
    pub result: Result<Vec<u8>, HttpError>,
    /// Whether only the active entries were asked for ([`Detail::Active`]).
    pub active_only: bool,
}

/// Fetches each worker's recorder snapshot, `concurrency` requests at a time, and hands every
/// answer to `each` as it arrives (so the caller can decode it and drop the bytes).
pub fn fetch_all(
    workers: &[Worker],
    recorders: &Mutex<BTreeMap<u32, Recorder>>,
    detail: Detail,
    timeout: Duration,
    concurrency: usize,
    each: &(dyn Fn(Fetched) + Sync),
) {
    for_each_worker(workers, concurrency, &|worker| {
        let known = lock(recorders).get(&worker.rank).copied();
        let (recorder, fetched) =
            fetch_recorder(worker, known.unwrap_or(Recorder::Unknown), detail, timeout);
        if let Some(recorder) = recorder {
            lock(recorders).insert(worker.rank, recorder);
        }
        each(fetched);
    });
}

/// Runs `work` once per worker on `concurrency` threads: the requests block on the network,
/// not on a CPU, so there are more threads than cores.
fn for_each_worker(workers: &[Worker], concurrency: usize, work: &(dyn Fn(&Worker) + Sync)) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..concurrency.clamp(1, workers.len().max(1)) {
            scope.spawn(|| {
                while let Some(worker) = workers.get(next.fetch_add(1, Ordering::Relaxed)) {
                    work(worker);
                }
            });
        }
    });
}

/// Fetches the snapshot from the recorder this worker uses; when that is not known yet, tries
/// the NCCL one first (whole, so the first snapshot is complete) and falls back to the CPU
/// one when NCCL has nothing (a Gloo job, or a torch built without NCCL, which answers 404).
/// An NCCL handler that refuses the [`Detail::Active`] parameters is asked again plainly and
/// remembered. Everything for one worker shares one deadline, `timeout` from now, so a slow
/// worker costs the snapshot at most that.
fn fetch_recorder(
    worker: &Worker,
    recorder: Recorder,
    detail: Detail,
    timeout: Duration,
) -> (Option<Recorder>, Fetched) {
    let deadline = Instant::now() + timeout;
    if recorder == Recorder::Nccl && detail == Detail::Active {
        let path = format!("/handler/{NCCL_HANDLER}{NCCL_ACTIVE_QUERY}");
        let result = http::post(&worker.endpoint, &path, deadline);
        if !matches!(result, Err(HttpError::Status { status: 400, .. })) {
            let source = PathBuf::from(format!("{}{path}", worker.endpoint.url()));
            return (None, Fetched { rank: worker.rank, source, result, active_only: true });
        }
        // The plain retry shares the deadline: a refusing worker still costs at most `timeout`.
        let (_, fetched) = fetch_handlers(worker, Recorder::NcclWithoutParams, deadline);
        return (Some(Recorder::NcclWithoutParams), fetched);
    }
    fetch_handlers(worker, recorder, deadline)
}

/// Tries `recorder`'s handlers in turn, asked plainly, until one answers with a recorder.
fn fetch_handlers(
    worker: &Worker,
    recorder: Recorder,
    deadline: Instant,
) -> (Option<Recorder>, Fetched) {
    let mut last = None;
    for &handler in recorder.handlers() {
        let path = format!("/handler/{handler}");
        let source = PathBuf::from(format!("{}{path}", worker.endpoint.url()));
        let result = http::post(&worker.endpoint, &path, deadline);
        let learned = match (&result, handler) {
            (Ok(body), NCCL_HANDLER) if recorder == Recorder::Unknown && !has_entries(body) => None,
            (Ok(_), NCCL_HANDLER) if recorder == Recorder::NcclWithoutParams => Some(recorder),
            (Ok(_), NCCL_HANDLER) => Some(Recorder::Nccl),
            (Ok(_), _) => Some(Recorder::Cpu),
            (Err(_), _) => None,
        };
        let fetched = Fetched { rank: worker.rank, source, result, active_only: false };
        if learned.is_some() {
            return (learned, fetched);
        }
        last = Some(fetched);
    }
    let fetched = last.unwrap_or_else(|| Fetched {
        rank: worker.rank,
        source: PathBuf::from(worker.endpoint.url()),
        result: Err(HttpError::Malformed("no handler".into())),
        active_only: false,
    });
    (None, fetched)
}

/// Whether an NCCL recorder pickle holds any entry. A dump with no entries (NCCL unused) has
/// no `profiling_name` key anywhere; every entry has one.
fn has_entries(pickle: &[u8]) -> bool {
    pickle.windows(14).any(|w| w == b"profiling_name")
}

/// Every rank's Python stacks (all threads), for the alert.
pub fn fetch_tracebacks(
    workers: &[Worker],
    timeout: Duration,
    concurrency: usize,
) -> BTreeMap<u32, String> {
    let out = Mutex::new(BTreeMap::new());
    let path = format!("/handler/{TRACEBACK_HANDLER}");
    for_each_worker(workers, concurrency, &|worker| {
        if let Ok(body) = http::post(&worker.endpoint, &path, Instant::now() + timeout) {
            lock(&out).insert(worker.rank, String::from_utf8_lossy(&body).into_owned());
        }
    });
    into_inner(out)
}

/// A panicked fetch thread leaves the data as whole as it was: the lock is only held to push
/// or insert, so a poisoned one is still safe to use.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_arguments() {
        let workers =
            parse_workers(&["http://a:1".into(), "7=http://b:2".into(), "http://c:3".into()])
                .unwrap();
        let ranks: Vec<u32> = workers.iter().map(|w| w.rank).collect();
        assert_eq!(ranks, [0, 7, 2]);
        assert_eq!(workers[1].endpoint.host, "b");
        assert!(parse_workers(&["b:2".into()]).is_err());
    }

    #[test]
    fn unresolvable_hosts_fall_back_to_the_store_host() {
        let e = Endpoint { host: "no-such-host.invalid".into(), port: 5 };
        assert_eq!(reachable(e, "127.0.0.1").host, "127.0.0.1");
        let e = Endpoint { host: "127.0.0.1".into(), port: 5 };
        assert_eq!(reachable(e.clone(), "10.0.0.1"), e);
    }
}
