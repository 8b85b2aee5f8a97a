//! Many dumps in, one summary per dump out, in parallel. Discovery is `analyze`'s: the same
//! files are picked, the same ones skipped with the same warnings.
//!
//! Output names keep the dump's own name, its rank last (`nccl_trace_rank_17` ->
//! `nccl_trace_rank_17.desync`), so `--prefix` selects summaries as it selects dumps. Two
//! inputs with one name (the same rank twice) keep both: the later gets a `dupN.` prefix and
//! `analyze` reports the duplicate as it would for the dumps.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::Progress;
use crate::error::{DumpError, Error};
use crate::load::{self, Attempt, Candidate, LoadOptions, Shared};
use crate::model::Warning;

/// What `summarize` did.
#[derive(Debug, Default)]
pub struct Summarized {
    /// Summaries written, one per dump file found.
    pub files: usize,
    /// Of those, summaries of dumps that could not be read (they carry the reason).
    pub unreadable: usize,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// What `analyze` would say about the files one by one (cross-rank warnings, such as
    /// missing ranks, belong to the analysis of the whole set).
    pub warnings: Vec<Warning>,
}

/// Summarizes every dump under `inputs` (directories or files) into `out_dir`.
pub fn summarize(
    inputs: &[PathBuf],
    out_dir: &Path,
    options: &LoadOptions,
    progress: &dyn Progress,
) -> Result<Summarized, Error> {
    // A FIFO or a file named as the output folder is refused before any dump is read.
    crate::output::check_dir_target(out_dir)?;
    std::fs::create_dir_all(out_dir)
        .map_err(|source| Error::Write { path: out_dir.to_path_buf(), source })?;
    // Summaries written into an input directory must not be read back as inputs next time.
    let out_real = out_dir.canonicalize().ok();
    let mut candidates = Vec::new();
    let mut warnings = Vec::new();
    for input in inputs {
        let found = load::discover(input, options)?;
        warnings.extend(found.warnings);
        candidates.extend(found.candidates.into_iter().filter(|c| {
            let real = c.path.canonicalize().ok();
            !matches!((&real, &out_real), (Some(p), Some(o)) if p.starts_with(o))
        }));
    }
    let names = output_names(&candidates);

    progress.start(candidates.len() as u64, "summarizing dumps");
    let shared = Shared::default();
    let outcomes: Vec<Result<Outcome, Error>> = candidates
        .into_par_iter()
        .zip(names)
        .map(|(c, name)| {
            let outcome = summarize_one(c, &out_dir.join(name), &shared);
            progress.advance(1);
            outcome
        })
        .collect();
    progress.finish();

    let mut done = Summarized { warnings, ..Summarized::default() };
    for outcome in outcomes {
        let o = outcome?;
        done.files += 1;
        done.unreadable += usize::from(o.unreadable);
        done.bytes_in += o.bytes_in;
        done.bytes_out += o.bytes_out;
        done.warnings.extend(o.warnings);
    }
    Ok(done)
}

struct Outcome {
    unreadable: bool,
    bytes_in: u64,
    bytes_out: u64,
    warnings: Vec<Warning>,
}

/// Decodes one dump and writes its summary (through a `.tmp` name, which discovery skips, so
/// a reader never sees half a file, and which is created new: a FIFO planted under either
/// name cannot block the write).
fn summarize_one(c: Candidate, target: &Path, shared: &Shared) -> Result<Outcome, Error> {
    // Regular files only, bounded, like every dump the loader reads (docs/security.md).
    let limit = crate::load::limits::MAX_DUMP_BYTES;
    let (attempt, bytes_in) = match crate::load::read_regular(&c.path, limit) {
        Ok(bytes) => (Attempt::decode(c.path, c.rank, &bytes, shared), bytes.len()),
        Err(e) => (Attempt { path: c.path, rank: c.rank, result: Err(DumpError::File(e)) }, 0),
    };
    let summary = super::write(&attempt);
    crate::output::write_bytes(target, &summary)
        .map_err(|source| Error::Write { path: target.to_path_buf(), source })?;
    let mut warnings = Vec::new();
    attempt.warnings(&mut warnings);
    Ok(Outcome {
        unreadable: attempt.result.is_err(),
        bytes_in: bytes_in as u64,
        bytes_out: summary.len() as u64,
        warnings,
    })
}

/// `<dump name without extension>.desync`, the rank last; `<name>_0.desync` for a file whose
/// name has no rank (it is read as rank 0, and the summary records that the name had none).
fn output_names(candidates: &[Candidate]) -> Vec<String> {
    let mut taken: FxHashMap<String, usize> = FxHashMap::default();
    candidates
        .iter()
        .map(|c| {
            let file = c.path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
            let name = match load::split_rank(&file) {
                Some((prefix, rank)) => format!("{prefix}{rank}.desync"),
                None => format!("{file}_0.desync"),
            };
            let seen = taken.entry(name.clone()).or_insert(0);
            *seen += 1;
            if *seen == 1 { name } else { format!("dup{}.{name}", *seen - 1) }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_the_rank_last_and_never_collide() {
        let c = |p: &str, rank| Candidate { path: PathBuf::from(p), rank };
        let names = output_names(&[
            c("a/nccl_trace_rank_7", Some(7)),
            c("b/nccl_trace_rank_7", Some(7)),
            c("a/trace_3.json", Some(3)),
            c("dump.pkl", None),
        ]);
        assert_eq!(
            names,
            [
                "nccl_trace_rank_7.desync",
                "dup1.nccl_trace_rank_7.desync",
                "trace_3.desync",
                "dump.pkl_0.desync"
            ]
        );
        for name in &names {
            assert!(load::split_rank(name).is_some(), "{name}");
        }
    }
}
