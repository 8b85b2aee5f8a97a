//! Where the late ranks are: for a stall, straggler, crash or inconclusive verdict, the line
//! each culprit rank's main thread was on when its stacks were taken (the stacks file beside
//! its dump, `load/stacks.rs`), and what that line sits in: the `while` it spins in, the `if`
//! or `try` around it, each condition with why it can differ across ranks
//! (`desync_python::Module::guards_with`, the same analysis the branch candidates use).
//!
//! The dumps say which collective a rank did not reach; only its stack says where it is
//! instead (waiting for a file, a lock, a queue, a rank-local loop).

use std::path::PathBuf;

use desync_python::{Analysis, Construct, FileProject};

use super::candidates::{Workspace, follow_parameters};
use super::stacks::UserStack;
use super::{DependenceItem, FrameView, Resolver, SourceOptions};
use crate::diagnose::{Category, Diagnosis};
use crate::model::{Frame, RankSet, StacksOrigin, Trace};

/// How many enclosing constructs are shown per place, innermost first.
const MAX_WITHIN: usize = 3;

/// Ranks whose main thread stood at the same innermost user line (for a traceback: the line
/// that raised, as far as the user's code goes).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RankPlace {
    #[serde(flatten, serialize_with = "crate::report::serialize_ranks")]
    pub ranks: RankSet,
    /// The stacks file read (the first rank's), or the log holding its traceback.
    #[serde(serialize_with = "crate::report::serialize_path")]
    pub stacks_file: PathBuf,
    /// `stacks_file` (a stacks file beside the dump), `log_traceback` (the traceback of an
    /// error the rank raised, in the job's log: where it was when it died) or `live_stacks`
    /// (`desync watch` asked the running rank's debug server).
    pub origin: &'static str,
    /// For a traceback: the exception line, and the lines of the log it spans.
    pub exception: Option<String>,
    pub log_lines: Option<(usize, usize)>,
    /// The innermost user frame of the main thread, as written (a path on the training host).
    pub file: String,
    #[serde(serialize_with = "crate::report::serialize_opt_path")]
    pub local_path: Option<PathBuf>,
    pub line: u32,
    pub function: String,
    /// The line's text, when its source was read.
    pub source: Option<String>,
    /// The constructs the line sits in, innermost first: what keeps the rank there.
    pub within: Vec<Within>,
    /// The main thread's user frames, innermost first.
    pub frames: Vec<FrameView>,
}

/// One construct around a rank's line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Within {
    /// `while`, `for`, `if`, `elif`, `else`, `try`, `except` or `with`.
    pub construct: String,
    pub line: u32,
    pub source: String,
    pub condition: Option<String>,
    /// Why the condition can differ across ranks (as `code.branch.dependence`).
    pub dependence: Vec<DependenceItem>,
}

/// Whether the verdict is one where a rank stopped short of its peers, so where it is instead
/// is the question.
pub fn wants_places(category: Category) -> bool {
    matches!(
        category,
        Category::Stall | Category::Straggler | Category::Crash | Category::Inconclusive
    )
}

/// Where each culprit rank with a stacks file was, ranks at the same line together, in rank
/// order. Empty for other verdicts and when no culprit left stacks.
pub fn places(trace: &Trace, d: &Diagnosis, options: &SourceOptions) -> Vec<RankPlace> {
    if !wants_places(d.category) || trace.stacks.is_empty() {
        return Vec::new();
    }
    let innermost: Vec<(u32, &crate::model::RankStacks, &Frame)> = d
        .culprit_ranks
        .as_slice()
        .iter()
        .filter_map(|&rank| {
            let stacks = trace.stacks_of(rank)?;
            Some((rank, stacks, stacks.main_thread().innermost_user()?))
        })
        .collect();
    if innermost.is_empty() {
        return Vec::new();
    }
    let resolver = Resolver::new(options);
    let mut roots = resolver.roots().to_vec();
    for (_, _, frame) in &innermost {
        if let Ok(local) = resolver.locate(&frame.file)
            && let Ok(real) = resolver.contain(&local)
            && let Some(dir) = real.parent()
        {
            roots.push(dir.to_path_buf());
        }
    }
    let project = FileProject::new(roots);
    let cx = Analysis::new(Some(&project));
    let ws = Workspace { resolver: &resolver, project: &project, cx: &cx };
    let mut out: Vec<RankPlace> = Vec::new();
    for (rank, stacks, frame) in innermost {
        if let Some(place) = out.iter_mut().find(|p| p.file == *frame.file && p.line == frame.line)
        {
            place.ranks = place.ranks.as_slice().iter().copied().chain([rank]).collect();
            continue;
        }
        out.push(place_of(&ws, rank, stacks, frame));
    }
    out
}

fn place_of(
    ws: &Workspace<'_>,
    rank: u32,
    stacks: &crate::model::RankStacks,
    frame: &Frame,
) -> RankPlace {
    let frames = stacks
        .main_thread()
        .frames
        .iter()
        .filter(|f| !f.is_library())
        .map(|f| FrameView {
            function: f.function.to_string(),
            file: f.file.to_string(),
            line: f.line,
        })
        .collect();
    let (origin, exception, log_lines) = match &stacks.origin {
        StacksOrigin::File => ("stacks_file", None, None),
        StacksOrigin::Live => ("live_stacks", None, None),
        StacksOrigin::Traceback { exception, first_line, exception_line } => {
            ("log_traceback", Some(exception.clone()), Some((*first_line, *exception_line)))
        }
    };
    let mut place = RankPlace {
        ranks: [rank].into_iter().collect(),
        stacks_file: stacks.path.clone(),
        origin,
        exception,
        log_lines,
        file: frame.file.to_string(),
        local_path: None,
        line: frame.line,
        function: frame.function.to_string(),
        source: None,
        within: Vec::new(),
        frames,
    };
    let Some((local, module)) = ws.module(frame) else { return place };
    place.source = module.line_text(frame.line).map(|t| t.trim().to_owned());
    place.local_path = Some(local);
    // A condition on a parameter is followed into the calling frames, as for a branch.
    let stack = UserStack::of_frames(&stacks.main_thread().frames);
    let innermost = stack.frames.len().saturating_sub(1);
    place.within = module
        .guards_with(ws.cx, frame.line)
        .into_iter()
        // Guards that could skip the line (an earlier `return`) say why a rank might not be
        // here; what it sits in says why it stays.
        .filter(|b| {
            !matches!(
                b.construct,
                Construct::Continue | Construct::Break | Construct::Return | Construct::Raise
            )
        })
        .take(MAX_WITHIN)
        .map(|mut b| {
            follow_parameters(ws, &mut b, &module, &stack, innermost);
            b
        })
        .map(|b| Within {
            construct: b.construct.as_str().to_owned(),
            line: b.line,
            source: b.source,
            condition: b.condition,
            dependence: b
                .dependence
                .iter()
                .map(|d| DependenceItem {
                    kind: d.kind.as_str().to_owned(),
                    evidence: d.evidence.clone(),
                })
                .collect(),
        })
        .collect();
    place
}

impl RankPlace {
    /// `train.py:41 in wait_for_shard()` and, when the source was read, the line's text and
    /// the construct it sits in: one phrase for the reports.
    pub fn describe(&self) -> String {
        let raised = self
            .exception
            .as_ref()
            .map(|e| format!("raised `{}` at ", crate::report::clip_chars(e, 100)))
            .unwrap_or_default();
        let mut text = format!(
            "{raised}{}:{} in {}()",
            crate::diagnose::short_path(&self.file),
            self.line,
            self.function
        );
        if let Some(source) = &self.source {
            text.push_str(&format!(" (`{source}`)"));
        }
        if let Some(w) = self.within.first() {
            text.push_str(&format!(
                ", inside the `{}` at line {} (`{}`)",
                w.construct, w.line, w.source
            ));
        }
        text
    }
}
