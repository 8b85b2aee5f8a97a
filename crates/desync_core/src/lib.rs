//! desync's analysis library: **load → model → align → diagnose → bridge → report**.
//!
//! Library code never prints or exits: it returns values, writes reports to the writer it is
//! given, and reports progress through [`Progress`]. Front ends (the CLI, watch, MCP) call
//! [`analyze`] and render the [`Analysis`].

pub mod align;
pub mod bridge;
pub mod diagnose;
mod error;
pub mod load;
pub mod logs;
pub mod model;
pub mod next_steps;
pub mod output;
pub mod report;
pub mod summary;

use std::path::{Path, PathBuf};

pub use error::{DumpError, Error};

/// Long work reports progress here; the CLI draws a bar, tests and libraries pass [`NoProgress`].
pub trait Progress: Sync {
    fn start(&self, total: u64, what: &str);
    fn advance(&self, n: u64);
    fn finish(&self);
}

pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64, _: &str) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Everything `analyze` needs, validated by the front end.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub input: PathBuf,
    pub load: load::LoadOptions,
    pub sources: bridge::SourceOptions,
}

/// The result of the whole workflow on one job.
pub struct Analysis {
    pub input: PathBuf,
    pub trace: model::Trace,
    pub alignment: align::Alignment,
    pub diagnosis: diagnose::Diagnosis,
    pub code: Option<bridge::CodeFinding>,
    pub probes: Vec<bridge::Probe>,
    /// For a stall, straggler, crash or inconclusive verdict: where each culprit rank that
    /// left a stacks file was (`bridge/place.rs`).
    pub places: Vec<bridge::RankPlace>,
    /// Where sources were read from (next steps repeat them in the commands they suggest).
    pub sources: bridge::SourceOptions,
    /// The job's log, when one was given beside the dumps (`analyze DIR --log FILE`): it adds
    /// what dumps cannot hold, the ranks that raised and their tracebacks.
    pub log: Option<logs::LogAnalysis>,
}

/// Runs the post-mortem workflow on a directory of dumps (or one file).
pub fn analyze(config: &Config, progress: &dyn Progress) -> Result<Analysis, Error> {
    let trace = load::load(&config.input, &config.load, progress)?;
    Ok(analyze_trace(&config.input, trace, &config.sources))
}

/// The workflow after loading; `watch` feeds live snapshots through here.
pub fn analyze_trace(
    input: &Path,
    trace: model::Trace,
    sources: &bridge::SourceOptions,
) -> Analysis {
    let alignment = align::align(&trace);
    let diagnosis = diagnose::diagnose(&trace, &alignment);
    let places = bridge::places(&trace, &diagnosis, sources);
    // A healthy job has no branch point to find.
    let code = diagnosis
        .category
        .is_problem()
        .then(|| bridge::find_code(&trace, &alignment, &diagnosis, sources, &places))
        .flatten();
    let probes = code.as_ref().map(|c| bridge::probes(c, sources)).unwrap_or_default();
    let mut trace = trace;
    // No source root at all because the working directory is `/` or the home directory: say
    // so once, with what to pass, rather than only per frame.
    if let (Some(dir), Some(_)) = (&sources.refused_fallback, &code) {
        trace.warnings.push(model::Warning {
            kind: model::WarningKind::Source,
            path: None,
            rank: None,
            message: format!(
                "no source file read: the working directory {} is `/` or the home directory (or above it), which desync never takes as the source root; pass --source-root DIR (the job's checkout) or --path-map FROM=TO",
                dir.display()
            ),
        });
    }
    // A source file that exists but was not used (outside the roots, not what ran) is a
    // warning: the reader must know the code section is missing on purpose.
    for refused in code.iter().flat_map(|c| &c.not_found) {
        if let Some(reason) = &refused.reason {
            let message = format!("source of {} {reason}", refused.file);
            trace.warnings.push(model::Warning {
                kind: model::WarningKind::Source,
                path: None,
                rank: None,
                message,
            });
        }
    }
    Analysis {
        input: input.to_path_buf(),
        trace,
        alignment,
        diagnosis,
        code,
        probes,
        places,
        sources: sources.clone(),
        log: None,
    }
}
