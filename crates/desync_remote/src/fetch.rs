//! List a prefix, pick the dumps by name, fetch them concurrently and decode each as it
//! arrives. Memory stays bounded: at most `requests` fetches run at once and the bytes held
//! (fetched, not yet decoded) stay under `bytes_in_flight`, so a thousand-rank job with large
//! dumps needs about as much memory as its decoded trace plus that window.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use desync_core::load::{Candidate, LoadOptions, Loader, Selection};
use desync_core::model::Trace;
use desync_core::{DumpError, Progress};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use tokio::sync::Semaphore;

use crate::Error;
use crate::error::{http_status, short_reason};
use crate::url::{RemoteUrl, Scheme};

/// Bounds on the fetching; the defaults suit a laptop and a cloud VM alike.
#[derive(Debug, Clone, Copy)]
pub struct Fetch {
    /// Requests in flight at once.
    pub requests: usize,
    /// Bytes fetched but not yet decoded, at most (one larger object still goes, alone).
    pub bytes_in_flight: u64,
}

impl Default for Fetch {
    fn default() -> Self {
        // S3 and GCS serve each request at tens of MB/s; 16 saturate a typical link without
        // tripping per-prefix request limits.
        Self { requests: 16, bytes_in_flight: 256 << 20 }
    }
}

/// Semaphore permits count KiB so that `acquire_many`'s `u32` covers any budget (up to
/// `u32::MAX >> 3` permits: tokio's limit on 32-bit targets).
const UNIT: u64 = 1024;

/// Loads every dump under `url` from `store`, like `desync_core::load::load` does a directory.
pub async fn load_from(
    store: &dyn ObjectStore,
    url: &RemoteUrl,
    options: &LoadOptions,
    fetch: Fetch,
    progress: &dyn Progress,
) -> Result<Trace, Error> {
    let listed = list(store, url).await?;
    let input = url.as_input();
    let objects: HashMap<PathBuf, ObjectMeta> =
        listed.into_iter().map(|meta| (url.object(&meta.location), meta)).collect();
    let mut names: Vec<PathBuf> = objects.keys().cloned().collect();
    names.sort();
    // Stack files beside remote dumps are not fetched yet: only dumps are downloaded.
    let Selection { candidates, warnings, .. } = desync_core::load::select(&input, names, options)?;

    progress.start(candidates.len() as u64, "fetching dumps");
    let loader = Arc::new(Loader::new(options));
    let budget = (fetch.bytes_in_flight.div_ceil(UNIT)).clamp(1, u64::from(u32::MAX >> 3)) as u32;
    let bytes = Semaphore::new(budget as usize);
    futures::stream::iter(candidates)
        .map(|Candidate { path, rank }| {
            let meta = &objects[&path];
            let need = (meta.size.div_ceil(UNIT)).clamp(1, u64::from(budget)) as u32;
            let (loader, bytes) = (Arc::clone(&loader), &bytes);
            async move {
                let limit = desync_core::load::limits::MAX_DUMP_BYTES;
                if meta.size > limit {
                    let error = desync_core::load::FileError::TooLarge { size: meta.size, limit };
                    loader.fail(path, rank, DumpError::File(error));
                    progress.advance(1);
                    return;
                }
                // The semaphore is never closed, so acquiring only waits.
                let _held = bytes.acquire_many(need).await.ok();
                match get(store, &meta.location).await {
                    Ok(data) => {
                        let decoded = Arc::clone(&loader);
                        let name = path.clone();
                        let job =
                            tokio::task::spawn_blocking(move || decoded.add(path, rank, &data));
                        if let Err(e) = job.await {
                            let why = format!("decoding stopped: {e}");
                            loader.fail(name, rank, DumpError::Io(std::io::Error::other(why)));
                        }
                    }
                    Err(e) => loader.fail(path, rank, e),
                }
                progress.advance(1);
            }
        })
        .buffer_unordered(fetch.requests.max(1))
        .collect::<()>()
        .await;
    progress.finish();
    let loader = Arc::into_inner(loader).expect("every fetch has finished");
    Ok(loader.finish(&input, warnings)?)
}

/// Every object under the prefix; a prefix that names one object lists just that object.
async fn list(store: &dyn ObjectStore, url: &RemoteUrl) -> Result<Vec<ObjectMeta>, Error> {
    let prefix = (!url.prefix.as_ref().is_empty()).then_some(&url.prefix);
    let listed: Vec<ObjectMeta> =
        store.list(prefix).try_collect().await.map_err(|e| list_error(url, &e))?;
    if !listed.is_empty() {
        return Ok(listed);
    }
    // `s3://bucket/run/trace_rank_0` names one dump, as a file path would.
    if let Some(prefix) = prefix
        && let Ok(meta) = store.head(prefix).await
    {
        return Ok(vec![meta]);
    }
    Err(Error::Empty { url: url.to_string() })
}

/// Listing only fails for the whole bucket: a missing prefix lists as empty.
fn list_error(url: &RemoteUrl, e: &object_store::Error) -> Error {
    let (url_text, reason) = (url.to_string(), short_reason(e));
    match http_status(e) {
        Some(404) => Error::NoBucket { url: url_text, bucket: url.bucket.clone() },
        Some(401 | 403) => Error::Denied { url: url_text, scheme: url.scheme, reason },
        _ if reason.contains("URL scheme is not allowed") => {
            let allow = match url.scheme {
                Scheme::S3 => "AWS_ALLOW_HTTP",
                Scheme::Gcs => "GOOGLE_ALLOW_HTTP",
            };
            let reason = format!("{reason} (set {allow}=true to use an http:// endpoint)");
            Error::List { url: url_text, reason }
        }
        _ => Error::List { url: url_text, reason },
    }
}

async fn get(store: &dyn ObjectStore, location: &ObjectPath) -> Result<bytes::Bytes, DumpError> {
    let fetched = async { store.get(location).await?.bytes().await };
    fetched.await.map_err(|e| DumpError::Io(std::io::Error::other(short_reason(&e))))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use desync_core::NoProgress;
    use desync_core::model::WarningKind;
    use object_store::PutPayload;
    use object_store::memory::InMemory;

    use super::*;

    fn scenario(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios").join(name).join("dumps")
    }

    /// An in-memory bucket holding `objects` (key, bytes).
    fn bucket(objects: &[(&str, Vec<u8>)]) -> InMemory {
        let store = InMemory::new();
        block_on(async {
            for (key, data) in objects {
                store.put(&ObjectPath::from(*key), PutPayload::from(data.clone())).await.unwrap();
            }
        });
        store
    }

    fn with_scenario(prefix: &str, name: &str) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> =
            std::fs::read_dir(scenario(name)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
            .into_iter()
            .map(|p| {
                let key = format!("{prefix}{}", p.file_name().unwrap().to_str().unwrap());
                (key, std::fs::read(&p).unwrap())
            })
            .collect()
    }

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
    }

    fn load(store: &InMemory, url: &str, fetch: Fetch) -> Result<Trace, Error> {
        let url = RemoteUrl::parse(url).unwrap();
        block_on(load_from(store, &url, &LoadOptions::default(), fetch, &NoProgress))
    }

    fn refs(objects: &[(String, Vec<u8>)]) -> Vec<(&str, Vec<u8>)> {
        objects.iter().map(|(k, v)| (k.as_str(), v.clone())).collect()
    }

    #[test]
    fn same_trace_as_the_directory() {
        let local =
            desync_core::load::load(&scenario("straggler"), &LoadOptions::default(), &NoProgress)
                .unwrap();
        let mut objects = with_scenario("jobs/7/", "straggler");
        // Another job under a sibling prefix must not leak in.
        objects.extend(with_scenario("jobs/70/", "crash"));
        let store = bucket(&refs(&objects));
        let trace = load(&store, "s3://b/jobs/7", Fetch::default()).unwrap();
        assert_eq!(trace.ranks.len(), local.ranks.len());
        assert_eq!(trace.files_seen, local.files_seen);
        for (remote, local) in trace.ranks.iter().zip(&local.ranks) {
            assert_eq!((remote.rank, remote.entries.len()), (local.rank, local.entries.len()));
        }
        assert_eq!(trace.ranks[0].path, PathBuf::from("s3://b/jobs/7/gloo_trace_rank_0"));
        let kinds = |t: &Trace| t.warnings.iter().map(|w| (w.kind, w.rank)).collect::<Vec<_>>();
        assert_eq!(kinds(&trace), kinds(&local));
    }

    #[test]
    fn bad_objects_are_warnings() {
        let mut objects = with_scenario("run/", "straggler");
        objects.push(("run/gloo_trace_rank_4".into(), b"\x80\x04garbage".to_vec()));
        objects.push(("run/gloo_trace_rank_5".into(), Vec::new()));
        objects.push(("run/gloo_trace_rank_1.pipe".into(), Vec::new()));
        let store = bucket(&refs(&objects));
        let trace = load(&store, "gs://b/run/", Fetch::default()).unwrap();
        assert_eq!(trace.ranks.len(), 4);
        let kinds: Vec<_> = trace.warnings.iter().map(|w| (w.kind, w.rank)).collect();
        assert!(kinds.contains(&(WarningKind::Unreadable, Some(4))), "{kinds:?}");
        assert!(kinds.contains(&(WarningKind::Unreadable, Some(5))), "{kinds:?}");
        assert!(kinds.contains(&(WarningKind::Skipped, None)), "{kinds:?}");
    }

    #[test]
    fn tiny_budget_still_reads_everything() {
        let store = bucket(&refs(&with_scenario("", "straggler")));
        let fetch = Fetch { requests: 1, bytes_in_flight: 1 };
        assert_eq!(load(&store, "s3://b", fetch).unwrap().ranks.len(), 4);
        let fetch = Fetch { requests: 0, bytes_in_flight: 0 };
        assert_eq!(load(&store, "s3://b/", fetch).unwrap().ranks.len(), 4);
    }

    #[test]
    fn one_object_by_name() {
        let store = bucket(&refs(&with_scenario("run/", "straggler")));
        let trace = load(&store, "s3://b/run/gloo_trace_rank_2", Fetch::default()).unwrap();
        assert_eq!(trace.ranks.len(), 1);
        assert_eq!(trace.ranks[0].rank, 2);
    }

    #[test]
    fn empty_and_dumpless_prefixes() {
        let store = bucket(&[("run/notes.txt", b"hello".to_vec())]);
        let e = load(&store, "s3://b/other/", Fetch::default()).unwrap_err();
        assert_eq!(e.to_string(), "no objects under s3://b/other/ (an empty or mistyped prefix?)");
        let e = load(&store, "s3://b/run/", Fetch::default()).unwrap_err();
        assert!(matches!(e, Error::Load(desync_core::Error::NoDumps { .. })), "{e:?}");
        assert!(
            e.to_string().starts_with("no Flight Recorder dumps in s3://b/run/: 1 file(s)"),
            "{e}"
        );
    }

    #[test]
    fn listing_errors_name_the_cause() {
        let generic =
            |text: &str| object_store::Error::Generic { store: "S3", source: text.into() };
        let s3 = RemoteUrl::parse("s3://gone/run").unwrap();
        let e = list_error(&s3, &generic("status code: 404 Not Found: <Code>NoSuchBucket</Code>"));
        assert!(matches!(e, Error::NoBucket { ref bucket, .. } if bucket == "gone"), "{e:?}");
        let e = list_error(&s3, &generic("status code: 403 Forbidden"));
        assert!(e.to_string().contains("AWS_ACCESS_KEY_ID"), "{e}");
        let gs = RemoteUrl::parse("gs://b/run").unwrap();
        let e = list_error(&gs, &generic("builder error: URL scheme is not allowed"));
        assert!(e.to_string().ends_with("(set GOOGLE_ALLOW_HTTP=true to use an http:// endpoint)"));
    }

    #[test]
    fn nothing_readable() {
        let store = bucket(&[("run/trace_0", b"nope".to_vec()), ("run/trace_1", Vec::new())]);
        let e = load(&store, "s3://b/run/", Fetch::default()).unwrap_err();
        assert!(
            matches!(e, Error::Load(desync_core::Error::NothingReadable { count: 2, .. })),
            "{e:?}"
        );
    }
}
