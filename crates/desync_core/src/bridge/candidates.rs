//! Candidates for the construct that sent ranks different ways, and the evidence for and
//! against each. Candidates never leave the user's code: they come from where the two sides'
//! user stacks part (the constructs between their lines), from the frames only one side has
//! (the conditions, loops, handlers and early returns guarding them, up to the frame both
//! share), and, for a metadata mismatch, from the setup that decides what the collective carries.
//!
//! Each candidate is scored on what can be shown:
//! - why its condition can differ across ranks (rank id > host or environment, a caught
//!   exception > rank-local data > randomness, time), found by following the data
//!   (`desync_python::Analysis`), parameters followed into the calling frames on the stack;
//! - what rules it out: a condition that is the same on every rank (agreed by a collective,
//!   configuration, constants), a loop whose length cannot differ (then a `break` or
//!   `return` inside it is what makes one side leave early), or an `if` both sides' stacks or
//!   recorded collectives show them running the same arm of (`arms.rs`);
//! - where it sits: between the two sides' lines beats a guard further out.
//!
//! The best one is `code.branch`; all are listed, best first, with their evidence.

use std::path::PathBuf;
use std::sync::Arc;

use desync_python::{Analysis, Branch, Construct, DependenceKind, FileProject, Module, Project};

use super::sources::{Resolver, SourceProblem, matches_frame};
use super::stacks::{Parting, UserStack};
use super::{BranchPoint, Candidate};
use crate::diagnose::short_path;
use crate::model::{Entry, Frame};

/// The user's code as the bridge sees it: frames resolved to local files, parsed once, and one
/// analysis over the whole project.
pub(crate) struct Workspace<'a> {
    pub resolver: &'a Resolver<'a>,
    pub project: &'a FileProject,
    pub cx: &'a Analysis<'a>,
}

impl Workspace<'_> {
    /// The local file of a frame, parsed, when it lies inside the source roots and holds what
    /// ran there.
    pub(crate) fn module(&self, frame: &Frame) -> Option<(PathBuf, Arc<Module>)> {
        self.source(frame).ok()
    }

    /// The local file of a frame, parsed, or why it is not used: not found, outside the roots
    /// (frame paths are text from the dump, `/etc/passwd` included), unreadable, or not what
    /// ran (the frame's function is not defined at its line: a stale checkout, a wrong root).
    pub(crate) fn source(&self, frame: &Frame) -> Result<(PathBuf, Arc<Module>), SourceProblem> {
        let local = self.resolver.locate(&frame.file)?;
        // The project's roots are the resolver's (and folders inside them), so `load` refuses
        // whatever `locate` would.
        let Some(module) = self.project.load(&local) else {
            let why = format!(
                "not a regular UTF-8 file of at most {} MB",
                desync_python::MAX_FILE_BYTES >> 20
            );
            return Err(SourceProblem::Unreadable { path: local, why });
        };
        if let Some(why) = module.refusal() {
            return Err(SourceProblem::Unreadable { path: local, why: why.to_owned() });
        }
        if let Err(why) = matches_frame(&module, &frame.function, frame.line) {
            return Err(SourceProblem::Differs { path: local, why });
        }
        Ok((local, module))
    }
}

/// A candidate before it is scored.
pub(crate) struct Raw {
    pub branch: Branch,
    /// The frame's file as written in the dumps, and where it was read.
    pub file: String,
    pub local: PathBuf,
    pub origin: Origin,
    /// How far from where the sides part (0: right there).
    pub distance: usize,
    /// The construct is a call (a setup call whose arguments differ), not a keyword.
    pub call: bool,
    /// What the construct decides, when it is not a frame's own line (a decision at a
    /// distance): the first evidence for it.
    pub note: Option<String>,
    /// It guards the write of a flag that a loop or `if` on the stacks reads
    /// (`distance::loop_flags`): the decision that construct only carries out.
    pub decides_loop: bool,
    /// What the framework does to a rank that takes this path, when it ends the rank there
    /// (a per-step hook returning `None` makes Lightning raise): such a rank is dead, not late.
    pub ends_rank: Option<String>,
    /// What the dumps show against it: both sides ran the same arm of it (`arms.rs`).
    pub against: Vec<String>,
    /// It guards a way out of the functions the others wait in, above their line, that the
    /// dumps show a rank took (it ended, or moved past their call: `exits.rs`).
    pub leaves_early: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Between the two sides' lines in the function both are in.
    Parting,
    /// Guarding a frame only the departing side has.
    DepartedOnly,
    /// Guarding a frame only the reference side has.
    ReferenceOnly,
    /// Configuration that decides what a collective carries.
    Setup,
    /// In the user's code the framework ran off the stack: a stop flag's write or a
    /// collective's guard (`distance.rs`).
    AtADistance,
}

impl Origin {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Parting => "between the two sides' lines",
            Self::DepartedOnly => "around code only the departing ranks ran",
            Self::ReferenceOnly => "around code only the other ranks ran",
            Self::Setup => "setup that decides what the collective carries",
            Self::AtADistance => "off the stacks, in code they do not pass through",
        }
    }

    /// The stable value of JSON `code.candidates[].origin` (docs/json-schema.md).
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Parting => "between_sides",
            Self::DepartedOnly => "departed_only",
            Self::ReferenceOnly => "reference_only",
            Self::Setup => "setup",
            Self::AtADistance => "at_a_distance",
        }
    }
}

/// Every candidate between two sides' stacks.
pub(crate) fn between(ws: &Workspace<'_>, departed: &Entry, reference: &Entry) -> Vec<Raw> {
    let (d, r) = (UserStack::of(departed), UserStack::of(reference));
    let mut out = Vec::new();
    let mut exits_from = None;
    let extension_from = match super::stacks::part(&d, &r) {
        Parting::Lines { index, departed_line, reference_line } => {
            let frame = d.frames[index];
            if let Some((local, module)) = ws.module(frame) {
                for mut b in module.branch_candidates(ws.cx, departed_line, Some(reference_line)) {
                    follow_parameters(ws, &mut b, &module, &d, index);
                    out.push(raw(b, &module, frame, &local, Origin::Parting, 0));
                }
            }
            // The departed ranks are past the call the others are still inside: they came
            // out of it early (the exits are looked for once every other candidate is in).
            if departed_line > reference_line {
                exits_from = Some(index + 1);
            }
            index + 1
        }
        Parting::Extension { common } => common,
    };
    out.extend(extension(ws, &d, extension_from, Origin::DepartedOnly));
    out.extend(extension(ws, &r, extension_from, Origin::ReferenceOnly));
    if let Some(from) = exits_from {
        let exits = super::exits::before_waiting(ws, reference, from, false, &mut out);
        out.extend(exits);
    }
    dedup(out)
}

/// The guards of one side's frames from `from` inward, innermost first: the conditions,
/// loops, handlers and jumps that decide whether each frame's line runs.
fn extension(ws: &Workspace<'_>, side: &UserStack<'_>, from: usize, origin: Origin) -> Vec<Raw> {
    let mut out = Vec::new();
    let n = side.frames.len();
    for i in (from..n).rev() {
        let frame = side.frames[i];
        let Some((local, module)) = ws.module(frame) else { continue };
        for mut b in module.guards_with(ws.cx, frame.line) {
            follow_parameters(ws, &mut b, &module, side, i);
            out.push(raw(b, &module, frame, &local, origin, n - 1 - i));
        }
    }
    out
}

fn raw(
    mut branch: Branch,
    module: &Module,
    frame: &Frame,
    local: &std::path::Path,
    origin: Origin,
    distance: usize,
) -> Raw {
    // An `except` whose body jumps is shown as the jump (see `point`): show its line too.
    if let Some(jump) = branch.jump
        && branch.construct == Construct::Except
    {
        module.line_text(jump.line).unwrap_or("").trim().clone_into(&mut branch.source);
    }
    Raw {
        branch,
        file: frame.file.to_string(),
        local: local.to_path_buf(),
        origin,
        distance,
        call: false,
        note: None,
        decides_loop: false,
        ends_rank: None,
        against: Vec::new(),
        leaves_early: false,
    }
}

/// The same construct found twice (from both sides, or as a parting and a guard) is one
/// candidate, kept where it was found first.
fn dedup(raws: Vec<Raw>) -> Vec<Raw> {
    let mut out: Vec<Raw> = Vec::new();
    for r in raws {
        if !out.iter().any(|o| o.local == r.local && o.branch.line == r.branch.line) {
            out.push(r);
        }
    }
    out
}

/// Parameters the condition flows from are followed into the frames that called this one
/// (while the calls are direct), and what the callers passed is added to its dependence.
pub(crate) fn follow_parameters(
    ws: &Workspace<'_>,
    b: &mut Branch,
    module: &Module,
    side: &UserStack<'_>,
    index: usize,
) {
    let (mut params, mut lengths) = (b.parameters.clone(), b.length_parameters.clone());
    let mut reads = b.member_reads.clone();
    let mut callee =
        (module.file_path().map(std::path::Path::to_path_buf), side.frames[index].line);
    let mut callee_module: Option<Arc<Module>> = None;
    for caller in side.direct_callers(index) {
        if params.is_empty() && lengths.is_empty() {
            break;
        }
        let Some((_, caller_module)) = ws.module(caller) else { break };
        let current: &Module = callee_module.as_deref().unwrap_or(module);
        let Some(found) = ws.cx.through_caller(
            current,
            callee.1,
            &params,
            &reads,
            &lengths,
            &caller_module,
            caller.line,
        ) else {
            break;
        };
        merge_dependence(b, &found.dependence);
        b.agreed.extend(found.agreed);
        b.configuration.extend(found.configuration);
        params = found.parameters;
        lengths = found.length_parameters;
        reads = found.member_reads;
        callee = (caller_module.file_path().map(std::path::Path::to_path_buf), caller.line);
        callee_module = Some(caller_module);
    }
    b.parameters = params;
    b.length_parameters = lengths;
    b.member_reads = reads;
    b.complete = b.parameters.is_empty()
        && b.length_parameters.is_empty()
        && !b.dependence.iter().any(|d| d.kind == DependenceKind::Unknown);
    let _ = callee.0;
}

/// Adds what a caller showed; an `Unknown` that only stood for "a parameter" gives way.
pub(crate) fn merge_dependence(b: &mut Branch, found: &[desync_python::Dependence]) {
    let shown: Vec<&desync_python::Dependence> =
        found.iter().filter(|d| d.kind != DependenceKind::Unknown).collect();
    if !shown.is_empty() {
        b.dependence.retain(|d| d.kind != DependenceKind::Unknown);
    }
    for d in shown {
        if !b.dependence.iter().any(|x| x.kind == d.kind) {
            b.dependence.push(d.clone());
        }
    }
    b.dependence.sort_by_key(|d| d.kind);
}

/// Scores and ranks, best first.
pub(crate) fn rank(raws: Vec<Raw>, counts: &dyn Fn(&str, u32) -> Option<String>) -> Vec<Candidate> {
    // A loop that runs as often on every rank cannot be left early without a jump.
    let uniform_loops: Vec<(PathBuf, u32, String)> = raws
        .iter()
        .filter(|r| r.branch.construct == Construct::For && is_uniform(&r.branch))
        .map(|r| (r.local.clone(), r.branch.line, r.branch.condition.clone().unwrap_or_default()))
        .collect();
    let mut scored: Vec<(i32, usize, Candidate)> = raws
        .into_iter()
        .enumerate()
        .map(|(order, r)| {
            let (score, evidence_for, evidence_against) = score(&r, &uniform_loops, counts);
            let branch = point(&r);
            (
                score,
                order,
                Candidate {
                    branch,
                    score,
                    evidence_for,
                    evidence_against,
                    origin: r.origin.code(),
                    ends_rank: r.ends_rank.clone(),
                },
            )
        })
        .collect();
    scored.sort_by_key(|(score, order, _)| (std::cmp::Reverse(*score), *order));
    scored.into_iter().map(|(_, _, c)| c).collect()
}

fn is_uniform(b: &Branch) -> bool {
    b.complete && b.dependence.is_empty()
}

fn score(
    r: &Raw,
    uniform_loops: &[(PathBuf, u32, String)],
    counts: &dyn Fn(&str, u32) -> Option<String>,
) -> (i32, Vec<String>, Vec<String>) {
    let b = &r.branch;
    let mut score = 0;
    let mut pro = Vec::new();
    let mut con = Vec::new();
    score += match r.origin {
        Origin::Parting => 30,
        Origin::Setup => 20,
        Origin::DepartedOnly | Origin::ReferenceOnly => 22 - 2 * (r.distance.min(6) as i32),
        Origin::AtADistance => 16 - 2 * (r.distance.min(6) as i32),
    } + if r.decides_loop { 20 } else { 0 }
        // A guarded way out that the dumps show taken: it outranks a guard the waiters only
        // pass through on their way to the line.
        + if r.leaves_early { 20 } else { 0 };
    pro.extend(r.note.clone());
    pro.push(format!("it is {}", r.origin.as_str()));
    score += match b.construct {
        Construct::For | Construct::While => 0,
        _ => 5,
    };
    let condition = b.condition.as_deref().unwrap_or(&b.source);
    let best = b.dependence.iter().map(|d| weight(d.kind)).max().unwrap_or(0);
    let extra = b.dependence.iter().filter(|d| weight(d.kind) > 0).count().saturating_sub(1) as i32;
    score += best + 3 * extra;
    for d in b.dependence.iter().filter(|d| d.kind != DependenceKind::Unknown) {
        let what = if b.construct == Construct::For { "how many items" } else { "" };
        if what.is_empty() {
            pro.push(format!(
                "`{}` depends on {}: {}",
                snippet(condition),
                d.kind.as_str(),
                d.evidence
            ));
        } else {
            pro.push(format!(
                "{what} `{}` yields depends on {}: {}",
                snippet(condition),
                d.kind.as_str(),
                d.evidence
            ));
        }
    }
    if let Some(agreed) = b.agreed.first() {
        score -= 50;
        con.push(format!("every rank decides alike: {agreed}"));
    } else if is_uniform(b) {
        score -= 50;
        if b.construct == Construct::For {
            con.push(format!("`{}` yields as many items on every rank", snippet(condition)));
        } else if !b.configuration.is_empty() {
            con.push(format!(
                "`{}` reads only configuration ({}) and constants, the same on every rank",
                snippet(condition),
                b.configuration.join(", ")
            ));
        } else {
            con.push(format!("`{}` is the same on every rank", snippet(condition)));
        }
    } else if best == 0 {
        score -= 5;
        let unknown = b
            .dependence
            .iter()
            .find(|d| d.kind == DependenceKind::Unknown)
            .map(|d| d.evidence.clone());
        con.push(match unknown {
            Some(u) => format!(
                "nothing in view shows why `{}` would differ across ranks ({u})",
                snippet(condition)
            ),
            None => format!(
                "nothing in view shows why `{}` would differ across ranks",
                snippet(condition)
            ),
        });
    }
    // Both sides ran the same arm: the dumps show it decided alike, whatever it reads.
    if !r.against.is_empty() {
        score -= 60;
        con.extend(r.against.iter().cloned());
    }
    let uniform_loop = uniform_loops.iter().find(|(f, line, _)| *f == r.local && *line < b.line);
    match (b.construct, uniform_loop) {
        (Construct::Break | Construct::Return | Construct::Raise, Some((_, line, iterable))) => {
            score += 15;
            pro.push(format!("the loop at line {line} over `{}` has the same length on every rank, so only a jump leaves it early", snippet(iterable)));
        }
        (Construct::Continue, Some((_, line, iterable))) if b.indirect => {
            score += 10;
            pro.push(format!("the loop at line {line} over `{}` runs as often on every rank: a skipped pass shifts a rank's collectives so it runs out of them one pass early", snippet(iterable)));
        }
        (Construct::Continue, None) if b.indirect => {
            score -= 15;
            con.push("a `continue` keeps a rank in the loop; it explains the other ranks being past the loop only if the loop ran as often on every rank".to_owned());
        }
        _ => {}
    }
    if let Some(line) = b.skipped_line
        && let Some(text) = counts(&r.file, line)
    {
        pro.push(text);
    }
    (score, pro, con)
}

/// How strongly a kind of dependence explains a divergence.
fn weight(kind: DependenceKind) -> i32 {
    match kind {
        DependenceKind::RankId => 40,
        DependenceKind::Environment | DependenceKind::Exception => 30,
        DependenceKind::LocalData => 25,
        DependenceKind::Randomness | DependenceKind::Time => 15,
        DependenceKind::Unknown => 0,
    }
}

fn snippet(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 70 {
        format!("{}…", one_line.chars().take(69).collect::<String>())
    } else {
        one_line
    }
}

/// The public form of a raw candidate.
fn point(r: &Raw) -> BranchPoint {
    let b = &r.branch;
    let mut point = super::branch_point(b, None);
    point.file.clone_from(&r.file);
    point.local_path = Some(r.local.clone());
    if r.call {
        "call".clone_into(&mut point.construct);
    }
    // An `except` whose body jumps: the jump is what skips the collective; the handler is why.
    if let Some(jump) = b.jump
        && b.construct == Construct::Except
    {
        point.handler_line = Some(b.line);
        point.line = jump.line;
        jump.construct.as_str().clone_into(&mut point.construct);
    }
    point
}

/// "collectives issued from train.py:26: rank(s) 0-1 28, rank(s) 2-3 29": how many times each
/// side ran a line, from the frames of the collectives it issued (one representative rank per
/// side). `None` when no side ran it or all ran it alike.
pub(crate) fn line_counts(
    sides: &[(String, Vec<&Entry>)],
    file: &str,
    line: u32,
) -> Option<String> {
    let counts: Vec<usize> = sides
        .iter()
        .map(|(_, entries)| {
            entries
                .iter()
                .filter(|e| e.user_frames().any(|f| &*f.file == file && f.line == line))
                .count()
        })
        .collect();
    if counts.iter().all(|&c| c == 0) || counts.windows(2).all(|w| w[0] == w[1]) {
        return None;
    }
    let parts: Vec<String> =
        sides.iter().zip(&counts).map(|((ranks, _), n)| format!("rank(s) {ranks} {n}")).collect();
    Some(format!("collectives issued from {}:{line}: {}", short_path(file), parts.join(", ")))
}
