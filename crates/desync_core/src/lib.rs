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
    /// Log files named by the user (`--log`); when none shows a line desync reads, a warning.
    pub logs: Vec<PathBuf>,
    /// Without `logs`, read the logs found in the dump directory (`logs::merge::beside`).
    pub logs_beside: bool,
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
    analyze_loaded(config, trace)
}

/// The workflow on loaded dumps, with the job's log: the files `config.logs` names (each must
/// show a line desync reads, else it is a warning), else, with `config.logs_beside`, the logs found in the dump
/// directory (`logs::merge::beside`).
pub fn analyze_loaded(config: &Config, mut trace: model::Trace) -> Result<Analysis, Error> {
    let log = if config.logs.is_empty() {
        config.logs_beside.then(|| logs::merge::beside(&trace)).flatten()
    } else {
        let log = logs::analyze(&config.logs)?;
        if log.evidence.is_empty() {
            // Beside dumps, a log of a job that failed on no line desync reads (a healthy
            // run's) is worth a warning, not the end of the dumps' analysis.
            let names: Vec<String> = config.logs.iter().map(|p| p.display().to_string()).collect();
            trace.warnings.push(model::Warning {
                kind: model::WarningKind::Skipped,
                path: None,
                rank: None,
                message: format!(
                    "log {}: no line desync reads (a watchdog timeout, a group's progress, a traceback, torchrun's failure table); content not shown",
                    names.join(", ")
                ),
            });
            None
        } else {
            Some(log)
        }
    };
    Ok(analyze_trace_with_log(&config.input, trace, &config.sources, log))
}

/// The workflow after loading; `watch` feeds live snapshots through here.
pub fn analyze_trace(
    input: &Path,
    trace: model::Trace,
    sources: &bridge::SourceOptions,
) -> Analysis {
    analyze_trace_with_log(input, trace, sources, None)
}

/// The workflow after loading, with the job's log when there is one: the tracebacks of the
/// ranks that raised become their stacks, and a culprit the log shows raised makes the
/// verdict a crash (`logs/merge.rs`).
pub fn analyze_trace_with_log(
    input: &Path,
    mut trace: model::Trace,
    sources: &bridge::SourceOptions,
    log: Option<logs::LogAnalysis>,
) -> Analysis {
    let mut log = logs::merge::with_stack_failures(&trace, log);
    if let Some(log) = &log {
        logs::merge::attach_tracebacks(&mut trace, log);
    }
    let alignment = align::align(&trace);
    let mut diagnosis = diagnose::diagnose(&trace, &alignment);
    if let Some(log) = &mut log {
        log.upgrade = logs::merge::upgrade(&trace, &mut diagnosis, log)
            .or_else(|| logs::ended::ended_short(&trace, &mut diagnosis, log));
    }
    let places = bridge::places(&trace, &diagnosis, sources);
    // A healthy job has no branch point to find.
    let code = diagnosis
        .category
        .is_problem()
        .then(|| bridge::find_code(&trace, &alignment, &diagnosis, sources, &places))
        .flatten();
    // Sends and receives Gloo does not record: the seqs shown may not be where ranks parted.
    if diagnosis.category.is_problem()
        && let Some(note) = bridge::unrecorded_point_to_point(&trace, sources)
    {
        diagnosis.evidence.push(note);
    }
    let probes = code.as_ref().map(|c| bridge::probes(c, sources)).unwrap_or_default();
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
        log,
    }
}
