//! Remote input for desync: Flight Recorder dumps in an S3 or Google Cloud Storage bucket,
//! read without copying them to disk first.
//!
//! A bucket prefix is treated like a local directory: its objects are named, skipped and given
//! ranks by `desync_core`'s rules (`desync_core::load::select`), each dump is decoded as soon as
//! it arrives (`desync_core::load::Loader`), and an object that cannot be fetched or decoded
//! becomes a warning. The network lives here (tokio, `object_store`) so that `desync_core` stays
//! synchronous and free of it.

mod error;
mod fetch;
mod store;
mod url;

use desync_core::Progress;
use desync_core::load::LoadOptions;
use desync_core::model::Trace;

pub use error::Error;
pub use fetch::{Fetch, load_from};
pub use store::build as build_store;
pub use url::{RemoteUrl, Scheme, scheme_of};

/// Loads every dump under `url`, configuring access from `env` (the caller's environment
/// variables, as (name, value) pairs; see [`build_store`] for which count).
///
/// Blocks: it runs its own small tokio runtime, so callers stay synchronous.
pub fn load(
    url: &RemoteUrl,
    env: impl IntoIterator<Item = (String, String)>,
    options: &LoadOptions,
    progress: &dyn Progress,
) -> Result<Trace, Error> {
    let store = store::build(url, env)?;
    // One thread drives the requests; decoding runs on tokio's blocking pool, so a current-
    // thread runtime is enough and starts no idle workers.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(load_from(&*store, url, options, Fetch::default(), progress))
}
