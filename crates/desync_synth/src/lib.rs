//! `desync_synth`: synthetic torch Flight Recorder (FR) dump sets.
//!
//! Role: generate NCCL-flavoured FR dumps for N ranks that follow the real
//! format exactly (key set, key order, value types, and the byte style of the
//! torch C++ pickler), with a realistic workload (several process groups, a
//! repeating training step, p2p pipeline batches, Python call stacks,
//! timestamps) and an optional injected fault, so analyzers can be tested and
//! benchmarked at any scale without GPUs.
//!
//! Invariants:
//! - Deterministic: the same [`Spec`] (seed included) gives byte-identical
//!   files, whatever the thread count or generation order.
//! - Streaming: ranks are generated independently, one output buffer per
//!   worker thread; nothing grows with the world size except O(world) plan
//!   tables. 16,384 ranks x 2,000 entries fit comfortably.
//! - Consistent: `pg_status`, sequence numbers and states agree with the
//!   entries and across ranks, except where the fault says otherwise.
//!
//! ```
//! use desync_synth::{Format, Plan, Spec};
//! let mut spec = Spec::new(4, 100);
//! spec.fault = "divergence:ranks=3,seq=20".parse().unwrap();
//! let plan = Plan::new(&spec).unwrap();
//! let bytes = desync_synth::render_rank(&plan, 3, Format::Pickle).unwrap();
//! assert_eq!(&bytes[..2], b"\x80\x02");
//! ```

mod emit;
pub mod pickler;
mod plan;
pub mod rng;
mod spec;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use plan::{FaultSite, Plan};
pub use spec::{Fault, Format, GroupSpec, Layout, OpKind, OpMix, Spec, TailState, parse_groups};

/// Errors of spec parsing, plan building and writing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid spec: {0}")]
    Spec(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The bytes of `rank`'s dump file, or `None` when the plan's fault crashed
/// that rank (or it is outside the world).
pub fn render_rank(plan: &Plan, rank: u32, format: Format) -> Option<Vec<u8>> {
    emit::render(plan, rank, format)
}

/// What [`write_dir`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteSummary {
    pub files: u32,
    pub bytes: u64,
}

/// Writes every rank's dump as `dir/<prefix><rank>` (creating `dir`), ranks
/// in parallel on the rayon pool, one rank's buffer per worker at a time.
pub fn write_dir(
    plan: &Plan,
    dir: &Path,
    prefix: &str,
    format: Format,
) -> Result<WriteSummary, Error> {
    let ranks = 0..=plan.spec().world_size.saturating_sub(1);
    write_ranks(plan, dir, prefix, format, ranks)
}

/// [`write_dir`] for the ranks in `ranks` only: a job too large for the disk
/// is written (and summarized) in slices of one plan.
pub fn write_ranks(
    plan: &Plan,
    dir: &Path,
    prefix: &str,
    format: Format,
    ranks: std::ops::RangeInclusive<u32>,
) -> Result<WriteSummary, Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    let per_rank = ranks
        .into_par_iter()
        .map(|rank| {
            let Some(bytes) = render_rank(plan, rank, format) else {
                return Ok((0, 0));
            };
            let path = dir.join(format!("{prefix}{rank}"));
            std::fs::write(&path, &bytes).map_err(|source| Error::Io { path, source })?;
            Ok((1, bytes.len() as u64))
        })
        .collect::<Result<Vec<(u32, u64)>, Error>>()?;
    Ok(WriteSummary {
        files: per_rank.iter().map(|x| x.0).sum(),
        bytes: per_rank.iter().map(|x| x.1).sum(),
    })
}
