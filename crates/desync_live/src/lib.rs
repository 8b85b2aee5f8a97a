//! desync's live front end: catch a desync while the job still hangs, minutes before the
//! NCCL watchdog fires.
//!
//! Sources ([`source`]) produce snapshots: a live job's debug-server workers (found through
//! its `TCPStore`, [`store`], or listed), or a dump directory the job rewrites. The loop
//! ([`watch`]) runs `desync_core`'s analysis on each and decides when a finding is real.
//! On jobs too large for one watcher, agents ([`publish`]) poll their share of the workers
//! into a directory that one watch judges.

pub mod http;
pub mod job;
pub mod publish;
pub mod save;
pub mod source;
pub mod store;
pub mod traceback;
pub mod watch;
pub mod workers;

pub use source::{Directory, Live, Reading, Snapshot, Source, SourceError};
pub use watch::{Alert, Event, Flow, Status, WatchOptions, watch};
pub use workers::Detail;
