//! A log beside the dumps: what only the log can show.
//!
//! - A Flight Recorder dump records collectives, not Python exceptions: a rank that raised
//!   before its next collective (DDP's unused-parameter error in its forward, an OOM in its
//!   data step) reads from the dumps alone as a rank that stopped short of its peers — a
//!   stall. When the log shows a culprit rank raised an error of its own (not a waiter's
//!   symptom, `traceback::SYMPTOMS`) or was killed by a fault signal, the verdict becomes a
//!   crash of that rank ([`upgrade`]), with the old reading kept in the evidence.
//! - The traceback of such a rank is where it was when it died: it becomes the rank's stack
//!   ([`attach_tracebacks`]) unless a stacks file was read for it, so `bridge/place.rs`
//!   shows and bridges its innermost user line as it does a stacks file's.
//!
//! Only culprit ranks are upgraded: a rank the dumps show waiting is a waiter whatever the
//! log says, and a divergence or a size mismatch stays what it is (Gloo aborts on a size
//! mismatch: the abort is its symptom).
//!
//! Logs found in the dump directory ([`beside`]) are read only when named like a log
//! (`load::discover::LOG_EXTENSIONS`), no larger than [`MAX_BESIDE_BYTES`], with content
//! that is a log and holds a line desync reads; anything else is left alone, unquoted.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::traceback::{Frame as TracebackFrame, Traceback, symptom_of};
use super::verdict::{Claim, ClaimKind};
use super::{Cite, LogAnalysis, LogEvidence};
use crate::diagnose::{Category, Diagnosis};
use crate::model::{Frame, RankSet, RankStacks, StacksOrigin, ThreadStack, Trace, is_library_file};

/// Claims of crashed ranks the upgraded headline quotes; the rest are counted.
const HEADLINE_CLAIMS: usize = 3;
/// Cites (in `log.upgrade.evidence`) and claim lines (in the verdict's evidence) an upgrade
/// keeps; every claim stays in `log.claims`.
const UPGRADE_CITES: usize = 16;

/// A log found beside the dumps larger than this is not read (name it with `--log`).
pub const MAX_BESIDE_BYTES: u64 = 32 << 20;

/// How the log changed the dumps' verdict (JSON `log.upgrade`).
#[derive(Debug, Clone, Serialize)]
pub struct Upgrade {
    /// The category the dumps alone gave.
    pub from: &'static str,
    /// The category the log made it: `crash` (a culprit's own error), or `divergence` (the
    /// culprits ended short of their peers, `logs/ended.rs`).
    pub to: &'static str,
    /// The headline the dumps alone gave.
    pub from_headline: String,
    /// The culprit ranks the log shows raised (now the verdict's culprits).
    #[serde(flatten, serialize_with = "crate::report::serialize_culprit_ranks")]
    pub culprit_ranks: Vec<u32>,
    /// Culprits of the dumps' verdict whose own error is not in the log.
    #[serde(flatten, serialize_with = "crate::report::serialize_not_in_log")]
    pub not_in_log: Vec<u32>,
    /// The lines it rests on (the first `UPGRADE_CITES`).
    pub evidence: Vec<Cite>,
}

/// The logs named like logs in the dump directory, read and parsed; `None` when none of them
/// holds a line desync reads. Files past [`MAX_BESIDE_BYTES`], unreadable or not text are
/// skipped in silence: the user did not name them.
pub fn beside(trace: &Trace) -> Option<LogAnalysis> {
    let mut texts = Vec::new();
    for path in &trace.logs_found {
        let Ok(bytes) = crate::load::read_regular(path, MAX_BESIDE_BYTES) else { continue };
        let head = &bytes[..bytes.len().min(64 * 1024)];
        if super::looks_like_log(head) {
            texts.push((path.clone(), String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    if texts.is_empty() {
        return None;
    }
    let evidence = super::parse(&texts);
    if evidence.is_empty() {
        return None;
    }
    let verdict = super::verdict::decide(&evidence);
    Some(LogAnalysis { evidence, verdict, found_beside: true, upgrade: None })
}

/// The log with the failures the ranks' stacks files record: a rank that died of an uncaught
/// exception wrote it in its stacks file's first line, with the main thread's frames at the
/// raise. That is the same evidence as its traceback in the job's log, so it is read as one
/// (the log's own traceback of the rank, when there is one, comes first and is the one
/// cited). Without a log, these alone make one, found beside the dumps.
pub fn with_stack_failures(trace: &Trace, log: Option<LogAnalysis>) -> Option<LogAnalysis> {
    let failures: Vec<Traceback> = trace.stacks.iter().filter_map(stack_failure).collect();
    if failures.is_empty() {
        return log;
    }
    let mut log = log.unwrap_or_else(|| {
        let evidence = LogEvidence::default();
        let verdict = super::verdict::decide(&evidence);
        LogAnalysis { evidence, verdict, found_beside: true, upgrade: None }
    });
    for t in failures {
        let Some(rank) = t.rank else { continue };
        if !log.evidence.ranks_seen.contains(&rank) {
            log.evidence.ranks_seen.push(rank);
        }
        let path = PathBuf::from(&t.cite.file);
        if !log.evidence.files.contains(&path) {
            log.evidence.files.push(path);
        }
        log.evidence.lines += 1;
        log.evidence.tracebacks.push(t);
    }
    log.evidence.ranks_seen.sort_unstable();
    log.verdict = super::verdict::decide(&log.evidence);
    Some(log)
}

/// A stacks file's uncaught exception as a traceback: the main thread's frames (outermost
/// first, as Python prints them), cited at the file's first line.
fn stack_failure(stacks: &RankStacks) -> Option<Traceback> {
    let exception = stacks.failure.clone()?;
    let main = stacks.threads.get(stacks.main)?;
    let frames: Vec<TracebackFrame> = main
        .frames
        .iter()
        .rev()
        .map(|f| TracebackFrame {
            file: f.file.to_string(),
            line: f.line,
            function: f.function.to_string(),
            source: None,
        })
        .collect();
    let user_frame = frames.iter().rev().find(|f| !is_library_file(&f.file)).cloned();
    let file = stacks.path.display().to_string();
    Some(Traceback {
        rank: Some(stacks.rank),
        symptom: symptom_of(&exception),
        cite: Cite { file, line: 1, text: super::clip(&format!("uncaught {exception}")) },
        exception,
        user_frame,
        frames,
        first_line: 1,
    })
}

/// The ranks whose own error the log shows (the verdict's `raised` claims), each with its
/// claim.
fn raised(log: &LogAnalysis) -> Vec<(u32, &Claim)> {
    log.verdict
        .claims
        .iter()
        .filter(|c| c.kind == ClaimKind::Raised)
        .flat_map(|c| c.ranks.iter().map(move |&r| (r, c)))
        .collect()
}

/// Each rank that raised an error of its own gets its traceback as its stack (the main
/// thread, innermost first) when no stacks file was read for it.
pub fn attach_tracebacks(trace: &mut Trace, log: &LogAnalysis) {
    let mut added = Vec::new();
    for (rank, _) in raised(log) {
        if trace.stacks_of(rank).is_some() || added.iter().any(|s: &RankStacks| s.rank == rank) {
            continue;
        }
        let Some(t) = log
            .evidence
            .tracebacks
            .iter()
            .find(|t| t.rank == Some(rank) && t.symptom.is_none() && !t.frames.is_empty())
        else {
            continue;
        };
        let frames = t
            .frames
            .iter()
            .rev()
            .map(|f| Frame::new(Arc::from(f.function.as_str()), Arc::from(f.file.as_str()), f.line))
            .collect();
        added.push(RankStacks {
            rank,
            path: PathBuf::from(&t.cite.file),
            threads: vec![ThreadStack { id: None, frames }],
            main: 0,
            origin: StacksOrigin::Traceback {
                exception: t.exception.clone(),
                first_line: t.first_line,
                exception_line: t.cite.line,
            },
            failure: None,
        });
    }
    trace.stacks.extend(added);
    trace.stacks.sort_by_key(|s| s.rank);
}

/// Whether a verdict says a rank stopped short of its peers, so that the log may say why.
fn upgradable(category: Category) -> bool {
    matches!(
        category,
        Category::Stall | Category::Straggler | Category::Crash | Category::Inconclusive
    )
}

/// Makes the dumps' verdict a crash of the culprits the log shows raised; returns what
/// changed, `None` when the log shows no culprit's own error.
pub fn upgrade(trace: &Trace, d: &mut Diagnosis, log: &LogAnalysis) -> Option<Upgrade> {
    if !upgradable(d.category) {
        return None;
    }
    let raised = raised(log);
    let crashed: Vec<(u32, &Claim)> =
        raised.into_iter().filter(|(r, _)| d.culprit_ranks.contains(*r)).collect();
    if crashed.is_empty() {
        return None;
    }
    let ranks: RankSet = crashed.iter().map(|(r, _)| *r).collect();
    let not_in_log: Vec<u32> =
        d.culprit_ranks.as_slice().iter().copied().filter(|r| !ranks.contains(*r)).collect();
    let mut claims: Vec<&Claim> = crashed.iter().map(|(_, c)| *c).collect();
    claims.dedup_by_key(|c| std::ptr::from_ref(*c));
    // A whole world can crash (an OOM on every rank): the headline quotes a few claims and
    // counts the rest, so it stays a sentence at any world size.
    let mut what: Vec<String> =
        claims.iter().take(HEADLINE_CLAIMS).map(|c| c.text.clone()).collect();
    if claims.len() > HEADLINE_CLAIMS {
        what.push(format!("and {} more rank(s) did too", claims.len() - HEADLINE_CLAIMS));
    }
    let waiting = d
        .groups
        .iter()
        .find(|g| g.stuck && !g.culprit)
        .map(|g| (g.ranks.brief(), crate::diagnose::describe_wait(trace, g)));
    // Said from where the quoted claims come: the job's log, or the ranks' own stacks files.
    let from_stacks = claims
        .iter()
        .take(HEADLINE_CLAIMS)
        .all(|c| c.evidence.iter().all(|cite| cite.file.ends_with(crate::load::STACKS_EXTENSION)));
    let source = match (from_stacks, ranks.len()) {
        (true, 1) => "its stacks file",
        (true, _) => "their stacks files",
        (false, _) => "the job's log",
    };
    let mut headline = format!("{} ({source})", what.join("; "));
    if let Some((ranks_waiting, at)) = &waiting {
        headline.push_str(&format!(
            "; rank(s) {ranks_waiting} wait for {} in {at}",
            if ranks.len() == 1 { "it" } else { "them" }
        ));
    }
    if !not_in_log.is_empty() {
        headline.push_str(&format!(
            "; rank(s) {} also stopped short, and the log shows no error of theirs",
            RankSet::new(not_in_log.clone()).brief()
        ));
    }
    let upgrade = Upgrade {
        from: d.category.as_str(),
        to: Category::Crash.as_str(),
        from_headline: d.headline.clone(),
        culprit_ranks: ranks.as_slice().to_vec(),
        not_in_log,
        evidence: claims
            .iter()
            .flat_map(|c| c.evidence.iter().cloned())
            .take(UPGRADE_CITES)
            .collect(),
    };
    d.evidence.push(format!(
        "the dumps alone read {}: {} — a dump records no Python exception",
        upgrade.from, upgrade.from_headline
    ));
    for c in claims.iter().take(UPGRADE_CITES) {
        let at =
            c.evidence.first().map(|e| format!(" ({}:{})", e.file, e.line)).unwrap_or_default();
        d.evidence.push(format!("the log: {}{at}", c.text));
    }
    d.category = Category::Crash;
    d.culprit_ranks = ranks;
    d.doubt = None;
    d.headline = headline;
    Some(upgrade)
}
