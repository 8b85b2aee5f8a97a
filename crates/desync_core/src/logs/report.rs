//! A log's analysis as text and as JSON (schema version 1, docs/json-schema.md, "Log
//! reports"), and the log section of a dump report (`analyze DUMPDIR --log FILE`).

use std::io::{self, Write};

use serde::Serialize;

use super::verdict::{Claim, ClaimKind, GroupRef};
use super::{Cite, LogAnalysis, LogEvidence};
use crate::diagnose::Category;
use crate::model::RankSet;
use crate::next_steps::NextStep;
use crate::report::{RankFields, escape_controls};

#[derive(Serialize)]
struct LogReport<'a> {
    schema_version: u32,
    desync_version: &'static str,
    input: Input<'a>,
    verdict: Verdict<'a>,
    claims: &'a [Claim],
    #[serde(skip_serializing_if = "Option::is_none")]
    claims_total: Option<usize>,
    log: LogView<'a>,
    next_steps: Vec<NextStep>,
}

#[derive(Serialize)]
struct Input<'a> {
    kind: &'static str,
    files: Vec<String>,
    lines: usize,
    #[serde(flatten)]
    ranks_seen: RankFields<'a>,
}

#[derive(Serialize)]
struct Verdict<'a> {
    category: &'static str,
    #[serde(flatten)]
    culprit_ranks: RankFields<'a>,
    process_group: Option<&'a GroupRef>,
    collective_seq_id: Option<u64>,
    headline: &'a str,
}

/// Everything parsed from the log (JSON `log`), also in a dump report's `log`. A log of a
/// world-sized job has a line per rank: rank sets are [`RankFields`] and each list keeps its
/// first [`LOG_LIST_LIMIT`] items, with `NAME_total` beside it when it was cut.
#[derive(Serialize)]
pub struct LogView<'a> {
    files: Vec<String>,
    #[serde(flatten)]
    ranks_seen: RankFields<'a>,
    timeouts: Vec<TimeoutView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeouts_total: Option<usize>,
    progress: Vec<ProgressView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    progress_total: Option<usize>,
    tracebacks: Vec<TracebackView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tracebacks_total: Option<usize>,
    exits: Vec<ExitView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exits_total: Option<usize>,
    #[serde(flatten)]
    desync_report_ranks: RankFields<'a>,
    #[serde(flatten)]
    first_to_time_out: RankFields<'a>,
}

/// Items of each list in a log's JSON view (timeouts, progress, tracebacks, exits, claims).
pub const LOG_LIST_LIMIT: usize = 64;

/// The first [`LOG_LIST_LIMIT`] items, and the whole count when that cut the list.
fn capped<T>(items: &[T]) -> (&[T], Option<usize>) {
    if items.len() > LOG_LIST_LIMIT {
        (&items[..LOG_LIST_LIMIT], Some(items.len()))
    } else {
        (items, None)
    }
}

#[derive(Serialize)]
struct TimeoutView<'a> {
    rank: Option<u32>,
    process_group: Option<GroupRef>,
    seq: u64,
    op: Option<&'a str>,
    numel_in: Option<u64>,
    numel_out: Option<u64>,
    timeout_ms: Option<u64>,
    line: &'a Cite,
}

#[derive(Serialize)]
struct ProgressView<'a> {
    rank: Option<u32>,
    process_group: Option<GroupRef>,
    failed_seq: Option<u64>,
    last_enqueued: Option<i64>,
    last_completed: Option<i64>,
    line: &'a Cite,
}

#[derive(Serialize)]
struct TracebackView<'a> {
    rank: Option<u32>,
    exception: &'a str,
    /// The reason it is a waiter's symptom (`SYMPTOMS`), or null for the rank's own error.
    symptom: Option<&'static str>,
    user_frame: Option<FrameView<'a>>,
    line: &'a Cite,
}

#[derive(Serialize)]
struct FrameView<'a> {
    file: &'a str,
    line: u32,
    function: &'a str,
    source: Option<&'a str>,
}

#[derive(Serialize)]
struct ExitView<'a> {
    rank: u32,
    local_rank: Option<u32>,
    exit_code: Option<i32>,
    signal: Option<&'a str>,
    first_observed: bool,
    line: &'a Cite,
}

/// A dump report's `log`: the log's own verdict beside the dumps', its claims, its lines.
#[derive(Serialize)]
pub struct LogSection<'a> {
    verdict: Verdict<'a>,
    claims: &'a [Claim],
    #[serde(skip_serializing_if = "Option::is_none")]
    claims_total: Option<usize>,
    /// Read because it lay in the dump directory (not named with `--log`).
    found_beside: bool,
    /// How the log changed the dumps' verdict, or null.
    upgrade: Option<&'a super::merge::Upgrade>,
    #[serde(flatten)]
    view: LogView<'a>,
}

pub fn log_section(a: &LogAnalysis) -> LogSection<'_> {
    let (claims, claims_total) = capped(&a.verdict.claims);
    LogSection {
        verdict: verdict_view(&a.verdict),
        claims,
        claims_total,
        found_beside: a.found_beside,
        upgrade: a.upgrade.as_ref(),
        view: log_view(&a.evidence),
    }
}

fn verdict_view(v: &super::LogVerdict) -> Verdict<'_> {
    Verdict {
        category: v.category.as_str(),
        culprit_ranks: RankFields::owned("culprit_ranks", v.culprit_ranks.clone()),
        process_group: v.process_group.as_ref(),
        collective_seq_id: v.collective_seq_id,
        headline: &v.headline,
    }
}

pub fn log_view(e: &LogEvidence) -> LogView<'_> {
    let firsts: Vec<u32> = e.nccl.dump_signals.iter().filter_map(|d| d.first_to_time_out).collect();
    let named: Vec<u32> =
        e.nccl.desync_named.iter().flat_map(|d| d.ranks.iter().copied()).collect();
    let (timeouts, timeouts_total) = capped(&e.nccl.timeouts);
    let (progress, progress_total) = capped(&e.nccl.progress);
    let (tracebacks, tracebacks_total) = capped(&e.tracebacks);
    let (exits, exits_total) = capped(&e.failures.exits);
    LogView {
        files: e.files.iter().map(|p| p.display().to_string()).collect(),
        ranks_seen: RankFields::owned("ranks_seen", e.ranks_seen.clone()),
        timeouts: timeouts
            .iter()
            .map(|t| TimeoutView {
                rank: t.rank,
                process_group: t.group.as_ref().map(GroupRef::from),
                seq: t.seq,
                op: t.op.as_deref(),
                numel_in: t.numel_in,
                numel_out: t.numel_out,
                timeout_ms: t.timeout_ms,
                line: &t.cite,
            })
            .collect(),
        timeouts_total,
        progress: progress
            .iter()
            .map(|p| ProgressView {
                rank: p.rank,
                process_group: p.group.as_ref().map(GroupRef::from),
                failed_seq: p.failed_seq,
                last_enqueued: p.last_enqueued,
                last_completed: p.last_completed,
                line: &p.cite,
            })
            .collect(),
        progress_total,
        tracebacks: tracebacks
            .iter()
            .map(|t| TracebackView {
                rank: t.rank,
                exception: &t.exception,
                symptom: t.symptom,
                user_frame: t.user_frame.as_ref().map(|f| FrameView {
                    file: &f.file,
                    line: f.line,
                    function: &f.function,
                    source: f.source.as_deref(),
                }),
                line: &t.cite,
            })
            .collect(),
        tracebacks_total,
        exits: exits
            .iter()
            .map(|x| ExitView {
                rank: x.rank,
                local_rank: x.local_rank,
                exit_code: x.exit_code,
                signal: x.signal.as_deref(),
                first_observed: x.first_observed,
                line: &x.cite,
            })
            .collect(),
        exits_total,
        desync_report_ranks: RankFields::owned("desync_report_ranks", named),
        first_to_time_out: RankFields::owned("first_to_time_out", firsts),
    }
}

/// The next steps a log's verdict calls for; the first is always the rerun with Flight
/// Recorder on, since a log alone rarely decides.
pub fn next_steps(a: &LogAnalysis) -> Vec<NextStep> {
    let v = &a.verdict;
    let mut steps = vec![NextStep {
        title: "Rerun with Flight Recorder on, and analyse the dumps with this log".to_owned(),
        command: Some(
            "TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=<shared dir>/rank_ <your launch command>; then desync analyze <shared dir> --log <this log>".to_owned(),
        ),
        why: "each rank then writes its last collectives with their Python stacks when the watchdog fires; desync aligns them and names the line that sent ranks different ways. older torch reads only the TORCH_NCCL_* names, TORCH_NCCL_TRACE_BUFFER_SIZE and TORCH_NCCL_DEBUG_INFO_TEMP_FILE (docs/flight-recorder.md has the version table); for Gloo, call desync.torch.enable() in the job".to_owned(),
    }];
    match v.category {
        Category::Crash => steps.push(NextStep {
            title: "Read the crashing rank's own error first".to_owned(),
            command: None,
            why: format!(
                "rank {} failed on its own; the other ranks' timeouts and closed connections follow from it",
                RankSet::new(v.culprit_ranks.clone()).brief()
            ),
        }),
        Category::Stall => steps.push(NextStep {
            title: "See where the late rank is on the rerun".to_owned(),
            command: Some(format!("py-spy dump --pid <pid of rank {}>", v.culprit_ranks.first().copied().unwrap_or(0))),
            why: "while the others wait, its Python stack shows the line it is on (data loading, I/O, a lock, a rank-local loop)".to_owned(),
        }),
        Category::Divergence | Category::MetadataMismatch => steps.push(NextStep {
            title: "Let torch check every collective across ranks on the rerun".to_owned(),
            command: Some("TORCH_DISTRIBUTED_DEBUG=DETAIL".to_owned()),
            why: "torch compares op, shapes and dtypes across the group before each collective and raises at the first mismatch, with both sides".to_owned(),
        }),
        _ => {}
    }
    steps
}

pub fn write_json(a: &LogAnalysis, out: &mut dyn Write) -> io::Result<()> {
    let e = &a.evidence;
    let v = &a.verdict;
    let report = LogReport {
        schema_version: crate::report::SCHEMA_VERSION,
        desync_version: env!("CARGO_PKG_VERSION"),
        input: Input {
            kind: "log",
            files: e.files.iter().map(|p| p.display().to_string()).collect(),
            lines: e.lines,
            ranks_seen: RankFields::owned("ranks_seen", e.ranks_seen.clone()),
        },
        verdict: verdict_view(v),
        claims: capped(&v.claims).0,
        claims_total: capped(&v.claims).1,
        log: log_view(e),
        next_steps: next_steps(a),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}

pub fn write_text(a: &LogAnalysis, out: &mut dyn Write) -> io::Result<()> {
    let e = &a.evidence;
    let v = &a.verdict;
    writeln!(out, "{}: {}", v.category.as_str(), escape_controls(&v.headline))?;
    let files = e.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    writeln!(
        out,
        "\nlog: {} ({} lines); ranks with lines of their own: {}",
        escape_controls(&files),
        e.lines,
        if e.ranks_seen.is_empty() {
            "none".to_owned()
        } else {
            RankSet::new(e.ranks_seen.clone()).brief().to_string()
        }
    )?;
    write_claims(&v.claims, out)?;
    writeln!(out, "\nnext steps:")?;
    for step in next_steps(a) {
        writeln!(out, "  - {}", step.title)?;
        if let Some(command) = &step.command {
            writeln!(out, "      {command}")?;
        }
        writeln!(out, "      {}", step.why)?;
    }
    Ok(())
}

/// The log's section in a dump report's text: the claims, each with its lines.
pub fn write_text_section(a: &LogAnalysis, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "\nFrom the log ({}):", escape_controls(&a.verdict.headline))?;
    let files = a.evidence.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
    writeln!(
        out,
        "  log: {}{}",
        escape_controls(&files.join(", ")),
        if a.found_beside { " (found in the dump directory)" } else { "" }
    )?;
    if let Some(u) = &a.upgrade {
        writeln!(
            out,
            "  the log made the dumps' verdict ({}) a {} of rank(s) {}",
            u.from,
            u.to,
            RankSet::new(u.culprit_ranks.clone()).brief()
        )?;
    }
    write_claims(&a.verdict.claims, out)
}

fn write_claims(claims: &[Claim], out: &mut dyn Write) -> io::Result<()> {
    if claims.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nwhat the log shows:")?;
    // The claims that carry a verdict first; then the waiters, then the rest.
    let order = |c: &Claim| match c.kind {
        ClaimKind::Raised
        | ClaimKind::Behind
        | ClaimKind::Mismatch
        | ClaimKind::DesyncReport
        | ClaimKind::Silent => 0,
        ClaimKind::TimedOut | ClaimKind::FailedWaiting | ClaimKind::FirstToTimeOut => 1,
        ClaimKind::Exited | ClaimKind::NotCompared => 2,
    };
    let mut sorted: Vec<&Claim> = claims.iter().collect();
    sorted.sort_by_key(|c| order(c));
    if sorted.len() > LOG_LIST_LIMIT {
        let more = sorted.len() - LOG_LIST_LIMIT;
        sorted.truncate(LOG_LIST_LIMIT);
        writeln!(out, "  ({more} more claim(s) past the first {LOG_LIST_LIMIT} not shown)")?;
    }
    for c in sorted {
        writeln!(out, "  - {}", escape_controls(&c.text))?;
        for cite in &c.evidence {
            writeln!(
                out,
                "      {}:{}: {}",
                escape_controls(&cite.file),
                cite.line,
                escape_controls(&cite.text)
            )?;
        }
    }
    Ok(())
}
