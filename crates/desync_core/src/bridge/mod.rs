//! Stage 4: from the diagnosis to the training code, never leaving the user's code.
//!
//! Frames are the user's or a library's by where their files live
//! ([`crate::model::Frame::is_library`]). The two sides' user stacks are compared outermost
//! first; the candidates for the construct that sent ranks different ways come from where they
//! part and from the frames only one side has ([`candidates`]), or, for a metadata mismatch,
//! from the collective's call and the setup that decides what it carries ([`setup`]). Each is
//! scored on the evidence the data shows (why its condition can differ across ranks, followed
//! through the project's files and the calling frames; what rules it out); the best is
//! `branch`, all are `candidates`. Stalls, crashes and hangs show the line where ranks wait.

mod arms;
mod candidates;
mod counts;
mod distance;
mod exits;
mod place;
mod point_to_point;
mod probes;
mod reducer;
mod setup;
mod sources;
mod stacks;

use std::path::PathBuf;

use desync_python::{Analysis, FileProject, Module};

use crate::align::Alignment;
use crate::diagnose::{BehaviourGroup, Category, Diagnosis, Position, short_path};
use crate::model::{Entry, RankSet, Trace};

pub use place::{RankPlace, Within, places, wants_places};
pub use point_to_point::unrecorded_note as unrecorded_point_to_point;
pub use probes::{Probe, probes, probes_diff};
pub use sources::{LocalSource, Resolved, Resolver, SourceOptions, SourceProblem};

/// What the bridge found in the code.
#[derive(Debug, Clone)]
pub struct CodeFinding {
    /// The deciding construct (or, for a metadata mismatch, the call): the best candidate.
    pub branch: Option<BranchPoint>,
    /// Every candidate considered, best first (the first is `branch`), with its evidence.
    pub candidates: Vec<Candidate>,
    /// The stacks compared, one per side.
    pub stacks: Vec<SideStack>,
    pub explanation: String,
    /// Lines around the branch, for the report.
    pub snippet: Option<Snippet>,
    /// Paths looked at for files that were not found.
    pub not_found: Vec<NotFound>,
}

/// One possible answer, with why it is or is not likely.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Candidate {
    #[serde(flatten)]
    pub branch: BranchPoint,
    /// Higher is more likely; only the order matters.
    pub score: i32,
    pub evidence_for: Vec<String>,
    pub evidence_against: Vec<String>,
    /// Where it was found, as a stable code: `between_sides`, `departed_only`,
    /// `reference_only`, `setup`, `group_order` or `call` (the collective call itself).
    pub origin: &'static str,
    /// What the framework does to a rank that takes this path when that ends the rank (from
    /// the knowledge table's hook rows); the next steps then read how it died instead of
    /// attaching py-spy to it. Already in `evidence_for`'s text.
    #[serde(skip)]
    pub ends_rank: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct NotFound {
    pub file: String,
    pub tried: Vec<String>,
    /// Why a file that exists was not used (outside the source roots, not what ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BranchPoint {
    /// As in the frames (a path on the training host).
    pub file: String,
    #[serde(serialize_with = "crate::report::serialize_opt_path")]
    pub local_path: Option<PathBuf>,
    pub line: u32,
    pub function: Option<String>,
    /// "if", "for", "continue", ..., or "call" when pointing at the collective call itself.
    pub construct: String,
    pub source: String,
    pub condition: Option<String>,
    pub condition_line: Option<u32>,
    pub dependence: Vec<DependenceItem>,
    /// The line the departing ranks skipped, when known.
    pub skipped_line: Option<u32>,
    /// For a jump inside an `except`: the handler's line (the exception is the reason).
    pub handler_line: Option<u32>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct DependenceItem {
    pub kind: String,
    pub evidence: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SideStack {
    pub role: &'static str,
    #[serde(flatten, serialize_with = "crate::report::serialize_ranks")]
    pub ranks: RankSet,
    pub frames: Vec<FrameView>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FrameView {
    pub function: String,
    pub file: String,
    pub line: u32,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Snippet {
    pub start_line: u32,
    pub marked_line: u32,
    pub lines: Vec<String>,
}

/// Both entries' user frames are the same frames at the same lines.
fn same_user_stacks(a: &Entry, b: &Entry) -> bool {
    a.user_frames().eq(b.user_frames())
}

/// Sides whose stacks are compared: (role, ranks, entry).
type Sides<'t> = Vec<(&'static str, RankSet, &'t Entry)>;

pub fn find_code(
    trace: &Trace,
    alignment: &Alignment,
    d: &Diagnosis,
    options: &SourceOptions,
    places: &[RankPlace],
) -> Option<CodeFinding> {
    let sides = sides(trace, alignment, d);
    if sides.iter().all(|(_, _, e)| e.stack().is_none()) {
        return None;
    }
    let resolver = Resolver::new(options);
    let project = FileProject::new(project_roots(&resolver, &sides));
    let cx = Analysis::new(Some(&project));
    let ws = candidates::Workspace { resolver: &resolver, project: &project, cx: &cx };
    let mut finding = CodeFinding {
        branch: None,
        candidates: Vec::new(),
        stacks: side_stacks(&sides),
        explanation: String::new(),
        snippet: None,
        not_found: not_found(&ws, &sides),
    };
    let departed = sides.iter().find(|(role, _, _)| *role == "departed").map(|s| s.2);
    let reference = sides.iter().find(|(role, _, _)| *role != "departed").map(|s| s.2);
    let counts = |file: &str, line: u32| -> Option<String> {
        let per_side: Vec<(String, Vec<&Entry>)> = sides
            .iter()
            .map(|(_, ranks, _)| {
                let entries = trace
                    .rank(ranks.as_slice()[0])
                    .map(|r| r.entries.iter().collect())
                    .unwrap_or_default();
                (ranks.to_string(), entries)
            })
            .collect();
        candidates::line_counts(&per_side, file, line)
    };
    // A straggler's code is where it arrives late, not where everyone ends up waiting.
    let late = straggler_late_entry(trace, alignment, d);
    finding.candidates = match (d.category, departed, reference) {
        // The culprits ended short of their peers (`logs/ended.rs`): what made them issue
        // fewer collectives is a guarded jump that skips the line the others wait at, in the
        // loop that issues them; the call itself comes after.
        (Category::Divergence, _, Some(waiting)) if d.ended_short => {
            let mut found = candidates::rank(exits::skipping_jumps(&ws, waiting), &counts);
            found.extend(call_candidate(&ws, waiting));
            counts::place(&mut found, counts::candidates(&ws, &[waiting]), None);
            found
        }
        (Category::Divergence | Category::Deadlock, Some(dep), Some(reference)) => {
            let mut raws = candidates::between(&ws, dep, reference);
            // The same user stacks on both sides: they part inside a framework, and what
            // decided is on no stack.
            if raws.is_empty() || same_user_stacks(dep, reference) {
                raws.extend(distance::candidates(&ws, &[dep, reference]));
                raws.extend(distance::hook_exits(&ws, &[dep, reference]));
                raws.extend(reducer::forward_skips(&ws, &[dep, reference]));
            }
            let flags = distance::loop_flags(&ws, &raws, &[dep, reference]);
            raws.extend(flags);
            raws.extend(distance::registrations(&ws, &[dep, reference]));
            if let [Some(d), Some(r)] =
                [true, false].map(|departed| side_record(trace, &sides, departed))
            {
                arms::rule_out_shared_arms(&ws, &mut raws, &[d, r]);
            }
            let mut found = candidates::rank(raws, &counts);
            // Identical stacks on both sides of a deadlock: the order of the groups, not the
            // path, differs. Look for a conditional reordering around each frame.
            if d.category == Category::Deadlock && found.first().is_none_or(|c| c.score < 40) {
                found.splice(0..0, order_branch(&ws, dep));
            }
            // A loop on the stacks whose trip count a rank-local filter decided elsewhere:
            // the filter comes first.
            counts::place(&mut found, counts::candidates(&ws, &[dep, reference]), None);
            found
        }
        // An all_to_all whose totals do not add up has no departed side: every rank issued
        // the same call, and the one side's stack is where the split sizes were passed.
        (Category::MetadataMismatch, departed, reference)
            if let Some(dep) = departed.or(reference) =>
        {
            let entries: Vec<&Entry> = [Some(dep), reference.filter(|r| !std::ptr::eq(*r, dep))]
                .into_iter()
                .flatten()
                .collect();
            let raws = setup::candidates(&ws, &entries, metadata_difference(d));
            let mut found = candidates::rank(raws, &counts);
            let call = call_candidate(&ws, dep);
            // Where the call's differing value was decided comes before the call, which only
            // passes it on.
            let origin = origin_candidate(&ws, dep, metadata_difference(d), call.as_ref());
            for c in [call, origin].into_iter().flatten() {
                let at = found.iter().position(|x| x.score < c.score).unwrap_or(found.len());
                found.insert(at, c);
            }
            found
        }
        (Category::Straggler, _, _) if let Some((entry, from)) = late => {
            straggler_candidate(&ws, entry, from).into_iter().collect()
        }
        // Stalls, crashes and hangs: the line where the others wait is what can be shown.
        // When that line calls a framework's entry point (`trainer.fit(...)`) and the culprits
        // stopped, whether they reached the next collective was decided in a hook the
        // framework's loop calls each step, on no stack: its early exits whose conditions the
        // data shows to differ across ranks come first. The call only runs that loop (what
        // its arguments depend on, the loader it is given, decides nothing about the exits).
        (category, dep, reference) => {
            let call = reference.or(dep).and_then(|e| call_candidate(&ws, e));
            let mut found = if matches!(category, Category::Stall | Category::Crash) {
                let entries: Vec<&Entry> = [reference, dep].into_iter().flatten().collect();
                let mut raws = distance::hook_exits(&ws, &entries);
                // The waiters' collective came from a reducer's backward: the rank that did
                // not issue it skipped a parameter in its forward, off every stack.
                raws.extend(reducer::forward_skips(&ws, &entries));
                // The culprits ended: by a raise or a process exit above the line the others
                // wait at, in code of theirs the stacks no longer show.
                if category == Category::Crash
                    && let Some(waiting) = reference
                {
                    let exits = exits::before_waiting(&ws, waiting, 0, true, &mut raws);
                    raws.extend(exits);
                }
                candidates::rank(raws, &counts)
            } else {
                Vec::new()
            };
            let call_score = call.as_ref().map(|c| c.score);
            found.extend(call);
            // How many messages or collectives a rank issued, decided at a distance (a
            // schedule's microbatch count, a loop's trip count) by a rank-local filter.
            if matches!(category, Category::Stall | Category::Crash) {
                let entries: Vec<&Entry> = [reference, dep].into_iter().flatten().collect();
                counts::place(&mut found, counts::candidates(&ws, &entries), call_score);
            }
            found
        }
    };
    let Some(best) = finding.candidates.first().map(|c| c.branch.clone()) else {
        finding.explanation = if finding.not_found.is_empty() {
            "nothing in the user's code around the two sides' stacks was recognised as deciding"
                .into()
        } else if let Some((file, reason)) =
            finding.not_found.iter().find_map(|n| Some((&n.file, n.reason.as_ref()?)))
        {
            format!("source of {} {reason}", short_path(file))
        } else {
            let files: Vec<&str> = finding.not_found.iter().map(|n| short_path(&n.file)).collect();
            format!(
                "source of {} not found on this machine; pass --source-root DIR or --path-map FROM=TO",
                files.join(", ")
            )
        };
        return Some(finding);
    };
    if let Some(local) = &best.local_path
        && let Some(module) = desync_python::Project::load(&project, local)
    {
        let jumpers = jumping_side(&best, &sides, &d.culprit_ranks);
        finding.explanation = explain(&best, d, &jumpers, &module, places);
        // Off the stack: say what the construct decides, or nothing shows why it matters.
        if let Some(first) = finding.candidates.first()
            && first.origin == candidates::Origin::AtADistance.code()
            && let Some(note) = first.evidence_for.first()
        {
            finding.explanation.push_str("; ");
            finding.explanation.push_str(note);
        }
        finding.snippet = Some(match straggler_from_line(d, &best) {
            Some(from) => snippet_between(&module, from, best.line),
            None => snippet(&module, best.line),
        });
    }
    finding.branch = Some(best);
    Some(finding)
}

/// The departed side (or the other one) with what its first rank issued before the entry
/// where it parted, newest first.
fn side_record<'t>(
    trace: &'t Trace,
    sides: &Sides<'t>,
    departed: bool,
) -> Option<arms::SideRecord<'t>> {
    let (_, ranks, at) = sides.iter().find(|(role, _, _)| (*role == "departed") == departed)?;
    let rank = trace.rank(*ranks.as_slice().first()?)?;
    let earlier =
        rank.entries.iter().filter(|e| e.record_id < at.record_id).rev().collect::<Vec<_>>();
    Some(arms::SideRecord { ranks: ranks.clone(), at, earlier })
}

fn side_stacks(sides: &Sides<'_>) -> Vec<SideStack> {
    sides
        .iter()
        .map(|(role, ranks, e)| SideStack {
            role,
            ranks: ranks.clone(),
            frames: e
                .user_frames()
                .map(|f| FrameView {
                    function: f.function.to_string(),
                    file: f.file.to_string(),
                    line: f.line,
                })
                .collect(),
        })
        .collect()
}

/// Where the project's files are: the source roots (`--source-root`, the path-map targets,
/// else the working directory), and the folders of the user frames found inside them (their
/// sibling modules are imported as the job ran). Nothing outside the source roots: frame
/// paths are text from the dumps.
fn project_roots(resolver: &Resolver<'_>, sides: &Sides<'_>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = resolver.roots().to_vec();
    for (_, _, e) in sides {
        for f in e.user_frames() {
            let Ok(local) = resolver.locate(&f.file) else { continue };
            if let Ok(real) = resolver.contain(&local)
                && let Some(dir) = real.parent()
            {
                roots.push(dir.to_path_buf());
            }
        }
    }
    roots
}

/// User frames of the sides whose files were not found here or not used (outside the source
/// roots, unreadable, or not what ran), with why.
fn not_found(ws: &candidates::Workspace<'_>, sides: &Sides<'_>) -> Vec<NotFound> {
    let mut out: Vec<NotFound> = Vec::new();
    for (_, _, e) in sides {
        for f in e.user_frames() {
            if out.iter().any(|n| n.file == *f.file) {
                continue;
            }
            if let Err(problem) = ws.source(f) {
                let reason = problem.is_refusal().then(|| problem.describe());
                out.push(NotFound { file: f.file.to_string(), tried: problem.tried(), reason });
            }
        }
    }
    out
}

/// Whether the mismatch was seen only as `all_to_all` totals that do not add up: the split
/// sizes that differ are not in the dumps.
fn unrecorded_splits(d: &Diagnosis) -> bool {
    d.earliest.as_ref().is_some_and(|e| e.departure == crate::diagnose::Departure::Numel)
}

/// Whether the mismatch is in dtypes or in sizes.
fn metadata_difference(d: &Diagnosis) -> setup::Difference {
    use crate::align::Difference;
    use crate::diagnose::Departure;
    match d.earliest.as_ref().map(|e| e.departure) {
        Some(Departure::Substituted { difference: Difference::Dtype }) => setup::Difference::Dtype,
        _ => setup::Difference::Size,
    }
}

/// A conditional reordering of what a loop iterates (`if ...: reductions.reverse()`) around
/// any user frame of `entry`, innermost first, its parameters followed into the callers.
fn order_branch(ws: &candidates::Workspace<'_>, entry: &Entry) -> Option<Candidate> {
    let stack = stacks::UserStack::of(entry);
    (0..stack.frames.len()).rev().find_map(|i| {
        let f = stack.frames[i];
        let (local, module) = ws.module(f)?;
        let mut found = module.find_order_branch_with(ws.cx, f.line)?;
        candidates::follow_parameters(ws, &mut found, &module, &stack, i);
        let shown =
            found.dependence.iter().any(|d| d.kind != desync_python::DependenceKind::Unknown);
        let mut point = branch_point(&found, None);
        point.file = f.file.to_string();
        point.local_path = Some(local);
        Some(Candidate {
            evidence_for: vec![format!(
                "it decides the order of the process groups the loop around {}:{} walks",
                short_path(&f.file),
                f.line
            )],
            evidence_against: Vec::new(),
            branch: point,
            score: if shown { 60 } else { 20 },
            origin: "group_order",
            ends_rank: None,
        })
    })
}

/// A straggler's late collective (the end of its slow interval) and the call site the
/// interval starts from.
fn straggler_late_entry<'t>(
    trace: &'t Trace,
    alignment: &Alignment,
    d: &'t Diagnosis,
) -> Option<(&'t Entry, &'t crate::diagnose::SiteRef)> {
    let s = d.straggler.as_ref()?;
    let interval = s.slow_interval.as_ref()?;
    let entry = alignment.groups[s.pg].first_at(trace, s.rank, interval.to.collective_seq_id)?;
    Some((entry, interval.from.call_site.as_ref()?))
}

/// The line the straggler reaches late, in the function where the slow interval starts (the
/// loop body both call sites share), else its innermost user frame.
fn straggler_candidate(
    ws: &candidates::Workspace<'_>,
    entry: &Entry,
    from: &crate::diagnose::SiteRef,
) -> Option<Candidate> {
    let stack = stacks::UserStack::of(entry);
    let innermost = stack.frames.len().checked_sub(1)?;
    let index = (0..stack.frames.len())
        .rev()
        .find(|&i| {
            let f = stack.frames[i];
            *f.file == *from.file && *f.function == *from.function
        })
        .unwrap_or(innermost);
    let frame = stack.frames[index];
    let (local, module) = ws.module(frame)?;
    let mut point = call_at(ws, &module, &stack, index);
    point.file = frame.file.to_string();
    point.local_path = Some(local);
    Some(Candidate {
        score: 50,
        evidence_for: vec![format!(
            "the straggler reaches this line late: the time goes between {}:{} and here",
            short_path(&from.file),
            from.line
        )],
        evidence_against: Vec::new(),
        branch: point,
        origin: "call",
        ends_rank: None,
    })
}

/// For a straggler whose slow interval starts in the same file as `branch`: that line.
fn straggler_from_line(d: &Diagnosis, branch: &BranchPoint) -> Option<u32> {
    let from = d.straggler.as_ref()?.slow_interval.as_ref()?.from.call_site.as_ref()?;
    (from.file == branch.file && from.line != branch.line).then_some(from.line)
}

/// Lines around both `from` and `to` (either order: a loop wraps), `to` marked; at most
/// [`MAX_BETWEEN`] lines, else the usual window around `to`.
fn snippet_between(module: &Module, from: u32, to: u32) -> Snippet {
    const MAX_BETWEEN: u32 = 30;
    let (low, high) = (from.min(to), from.max(to));
    if high - low > MAX_BETWEEN {
        return snippet(module, to);
    }
    // A loop wraps from the later line back to the earlier one: show the header above it.
    let start = low.saturating_sub(if from > to { 6 } else { 2 }).max(1);
    let lines: Vec<String> =
        (start..=high + 1).map_while(|l| module.line_text(l).map(str::to_owned)).collect();
    Snippet { start_line: start, marked_line: to, lines }
}

/// The collective call in the innermost user frame of `entry` and where its arguments come
/// from, parameters followed into the calling frames.
fn call_candidate(ws: &candidates::Workspace<'_>, entry: &Entry) -> Option<Candidate> {
    let stack = stacks::UserStack::of(entry);
    let index = stack.frames.len().checked_sub(1)?;
    let frame = stack.frames[index];
    let (local, module) = ws.module(frame)?;
    let mut point = call_at(ws, &module, &stack, index);
    point.file = frame.file.to_string();
    point.local_path = Some(local);
    let shown: Vec<&DependenceItem> =
        point.dependence.iter().filter(|d| d.kind != "unknown").collect();
    let mut evidence_for = vec!["it is the collective call itself".to_owned()];
    evidence_for.extend(
        shown.iter().map(|d| format!("its arguments depend on {}: {}", d.kind, d.evidence)),
    );
    let score = if shown.is_empty() { 25 } else { 60 };
    Some(Candidate {
        score,
        evidence_for,
        evidence_against: Vec::new(),
        branch: point,
        origin: "call",
        ends_rank: None,
    })
}

/// The line that decided the size or dtype the collective call on `entry`'s innermost user
/// frame carries, followed back through the user's frames and the project's functions
/// ([`desync_python::Analysis::value_origin`]); `None` when it is the call's own line or not
/// in view.
fn origin_candidate(
    ws: &candidates::Workspace<'_>,
    entry: &Entry,
    difference: setup::Difference,
    call: Option<&Candidate>,
) -> Option<Candidate> {
    let stack = stacks::UserStack::of(entry);
    // Innermost first, each with whether the next one out called it.
    let frames: Vec<(PathBuf, std::sync::Arc<Module>, &crate::model::Frame, bool)> = stack
        .frames
        .iter()
        .zip(&stack.dispatched)
        .rev()
        .map_while(|(f, called)| ws.module(f).map(|(local, module)| (local, module, *f, *called)))
        .collect();
    let innermost = frames.first()?.2;
    let carried = match difference {
        setup::Difference::Dtype => desync_python::Carried::Dtype,
        setup::Difference::Size => desync_python::Carried::Size,
    };
    let modules: Vec<desync_python::OriginFrame> = frames
        .iter()
        .map(|(_, module, f, called)| desync_python::OriginFrame {
            module: module.clone(),
            line: f.line,
            called_from_outer: *called,
        })
        .collect();
    let found = ws.cx.value_origin(&modules, carried)?;
    // As the frames found it when it is one of their files (a relative root stays relative).
    let found_at = found.module.file_path()?;
    let same = |a: &std::path::Path| {
        a == found_at || a.canonicalize().ok() == found_at.canonicalize().ok()
    };
    let local = frames
        .iter()
        .find(|(l, _, _, _)| same(l))
        .map_or_else(|| found_at.to_path_buf(), |(l, _, _, _)| l.clone());
    // Inside the call's own function the call's candidate already says where its arguments
    // were assigned; the origin adds what the call's line cannot show, further out.
    let call_function = frames[0].1.function_at(innermost.line).map(|f| f.def_line);
    if local == frames[0].0
        && found.module.function_at(found.line).map(|f| f.def_line) == call_function
    {
        return None;
    }
    let on_stack: Vec<(&str, &std::path::Path)> =
        frames.iter().map(|(local, _, f, _)| (&*f.file, local.as_path())).collect();
    let file = setup::host_name(&on_stack, &local);
    let what = match carried {
        desync_python::Carried::Dtype => "dtype",
        desync_python::Carried::Size => "size",
    };
    let decides = if found.choice { "chooses" } else { "computes" };
    let mut evidence_for = vec![format!(
        "it {decides} the {what} that `{}` at {}:{} carries: {}",
        call.map_or("the collective", |c| c.branch.source.as_str()),
        short_path(&innermost.file),
        innermost.line,
        found.path.join(" ← ")
    )];
    evidence_for.extend(
        found.dependence.iter().map(|d| {
            format!("`{}` depends on {}: {}", found.decided_by, d.kind.as_str(), d.evidence)
        }),
    );
    let point = BranchPoint {
        file,
        local_path: Some(local),
        line: found.line,
        function: found.function.clone(),
        construct: "origin".into(),
        source: found.source.clone(),
        condition: Some(found.decided_by.clone()),
        condition_line: Some(found.line),
        dependence: found
            .dependence
            .iter()
            .map(|d| DependenceItem {
                kind: d.kind.as_str().to_owned(),
                evidence: d.evidence.clone(),
            })
            .collect(),
        skipped_line: None,
        handler_line: None,
    };
    Some(Candidate {
        score: call.map_or(60, |c| c.score.max(60)) + 5,
        evidence_for,
        evidence_against: Vec::new(),
        branch: point,
        origin: "value_origin",
        ends_rank: None,
    })
}

/// The collective call at frame `index` of `stack` and where its arguments come from. An
/// argument that flows from a parameter is followed into the calling frames while the calls
/// are direct.
fn call_at(
    ws: &candidates::Workspace<'_>,
    module: &Module,
    stack: &stacks::UserStack<'_>,
    index: usize,
) -> BranchPoint {
    let line = stack.frames[index].line;
    let origin = module.explain_call_with(ws.cx, line);
    let mut dependence: Vec<DependenceItem> = Vec::new();
    let mut parameters: Vec<String> = Vec::new();
    for a in origin.iter().flat_map(|o| &o.arguments) {
        parameters.extend(a.parameters.iter().cloned());
        for d in a.dependence.iter().filter(|d| d.kind != desync_python::DependenceKind::Unknown) {
            let evidence = match a.defined_at {
                Some(at) => format!("`{}` (line {at}): {}", a.text, d.evidence),
                None => format!("`{}`: {}", a.text, d.evidence),
            };
            dependence.push(DependenceItem { kind: d.kind.as_str().to_owned(), evidence });
        }
    }
    parameters.dedup();
    // Follow the parameters outward, one direct caller at a time.
    let mut callee: (Option<std::sync::Arc<Module>>, u32) = (None, line);
    for caller in stack.direct_callers(index) {
        if parameters.is_empty() {
            break;
        }
        let Some((_, caller_module)) = ws.module(caller) else { break };
        let current: &Module = callee.0.as_deref().unwrap_or(module);
        let Some(found) = ws.cx.through_caller(
            current,
            callee.1,
            &parameters,
            &[],
            &[],
            &caller_module,
            caller.line,
        ) else {
            break;
        };
        for d in
            found.dependence.iter().filter(|d| d.kind != desync_python::DependenceKind::Unknown)
        {
            dependence.push(DependenceItem {
                kind: d.kind.as_str().to_owned(),
                evidence: d.evidence.clone(),
            });
        }
        parameters = found.parameters;
        callee = (Some(caller_module), caller.line);
    }
    if dependence.is_empty() && !parameters.is_empty() {
        let evidence =
            format!("`{}` (parameters whose callers are not in view)", parameters.join("`, `"));
        dependence.push(DependenceItem { kind: "unknown".into(), evidence });
    }
    // The most telling origins first: what differs by rank beats what merely is local.
    dependence.sort_by_key(origin_rank);
    dependence.dedup_by(|a, b| a.evidence == b.evidence);
    BranchPoint {
        file: String::new(),
        local_path: None,
        line,
        function: module.function_at(line).map(|f| f.name),
        construct: "call".into(),
        source: module.line_text(line).unwrap_or("").trim().to_owned(),
        condition: None,
        condition_line: None,
        dependence,
        skipped_line: None,
        handler_line: None,
    }
}

fn branch_point(found: &desync_python::Branch, fallback_skipped: Option<u32>) -> BranchPoint {
    BranchPoint {
        file: String::new(),
        local_path: None,
        line: found.line,
        function: found.function.clone(),
        construct: found.construct.as_str().to_owned(),
        source: found.source.clone(),
        condition: found.condition.clone(),
        condition_line: found.condition_line,
        dependence: found
            .dependence
            .iter()
            .map(|d| DependenceItem {
                kind: d.kind.as_str().to_owned(),
                evidence: d.evidence.clone(),
            })
            .collect(),
        skipped_line: found.skipped_line.or(fallback_skipped),
        handler_line: None,
    }
}

/// Stalls, crashes and hangs: the line shown is where the other ranks wait, so it is said of
/// them; of the culprits only what their dumps show (never what a rank without a dump did).
fn waiting_at_call(b: &BranchPoint, d: &Diagnosis, at: &str, places: &[RankPlace]) -> String {
    let ranks_where = |keep: &dyn Fn(&crate::diagnose::BehaviourGroup) -> bool| -> RankSet {
        d.groups
            .iter()
            .filter(|g| keep(g))
            .flat_map(|g| g.ranks.as_slice().iter().copied())
            .collect()
    };
    let culprits = &d.culprit_ranks;
    match d.category {
        Category::Straggler => return arriving_late(b, d, at),
        Category::GpuHang => {
            return format!(
                "every rank issued `{}` at {at}; it never ran to completion on rank(s) {culprits}: a kernel, NCCL or network hang, not a different code path (see the next steps)",
                b.source
            );
        }
        _ => {}
    }
    let waiting = ranks_where(&|g| g.stuck && !g.culprit);
    let without_dump = ranks_where(&|g| g.culprit && g.position == Position::NoDump);
    let who = if waiting.is_empty() { "ranks".to_owned() } else { format!("rank(s) {waiting}") };
    let mut text = format!("{who} wait in `{}` at {at}", b.source);
    if !without_dump.is_empty() {
        text.push_str(&format!(
            "; rank(s) {without_dump} left no dump, so where they stopped is not known"
        ));
    }
    let others: RankSet =
        culprits.as_slice().iter().copied().filter(|&r| !without_dump.contains(r)).collect();
    // Where their stacks put them: the line they are on instead.
    let placed: Vec<&RankPlace> =
        places.iter().filter(|p| p.ranks.as_slice().iter().any(|&r| others.contains(r))).collect();
    for place in &placed {
        // A traceback's place says what the rank did there (`raised ... at`).
        let verb = if place.exception.is_some() { "" } else { "are at " };
        text.push_str(&format!("; rank(s) {} {verb}{}", place.ranks, place.describe()));
    }
    let others: RankSet = others
        .as_slice()
        .iter()
        .copied()
        .filter(|&r| !placed.iter().any(|p| p.ranks.contains(r)))
        .collect();
    if !others.is_empty() {
        text.push_str(&format!(
            "; rank(s) {others} did not reach it (see their position under Behavioural groups)"
        ));
    }
    text
}

/// A straggler: the line it reaches late and where the time goes.
fn arriving_late(b: &BranchPoint, d: &Diagnosis, at: &str) -> String {
    let culprits = &d.culprit_ranks;
    let interval = d.straggler.as_ref().and_then(|s| s.slow_interval.as_ref());
    let Some(from) = interval.and_then(|i| i.from.call_site.as_ref()) else {
        return format!(
            "rank(s) {culprits} reach `{}` at {at} later than their peers, who wait there for them",
            b.source
        );
    };
    let wraps =
        if from.file == b.file && from.line > b.line { " (the loop's next iteration)" } else { "" };
    format!(
        "rank(s) {culprits} reach `{}` at {at}{wraps} about {:.0} ms later than their peers: the code run after {}:{} and before this line is slower on rank(s) {culprits} (data loading, host work, a rank-local branch)",
        b.source,
        interval.map_or(0.0, |i| i.mean_extra_ms),
        short_path(&from.file),
        from.line,
    )
}

/// Command-line configuration is the same on every rank unless the launcher differs, so it
/// ranks below what is rank-local by construction.
fn origin_rank(d: &DependenceItem) -> u8 {
    if d.evidence.contains("(configuration)") {
        return 5;
    }
    match d.kind.as_str() {
        "rank id" => 0,
        "environment/host config" => 1,
        "rank-local data" => 2,
        "randomness" => 3,
        "time" => 4,
        "a caught exception" => 5,
        _ => 6,
    }
}

/// The ranks that took a jump: the side whose stack does not hold the line it skips. A
/// `return` around code only the culprits ran (a barrier the others never reached) was taken
/// by the others; one that skips what the others are in was taken by the culprits.
fn jumping_side(b: &BranchPoint, sides: &Sides<'_>, culprits: &RankSet) -> RankSet {
    let Some(skipped) = b.skipped_line else { return culprits.clone() };
    let holds = |entry: &Entry| {
        entry
            .stack()
            .is_some_and(|frames| frames.iter().any(|f| f.line == skipped && *f.file == *b.file))
    };
    let departed_holds = sides.iter().any(|(role, _, e)| *role == "departed" && holds(e));
    let others = sides.iter().find(|(role, _, e)| *role != "departed" && !holds(e));
    match others {
        Some((_, ranks, _)) if departed_holds => ranks.clone(),
        _ => culprits.clone(),
    }
}

fn explain(
    b: &BranchPoint,
    d: &Diagnosis,
    jumpers: &RankSet,
    module: &Module,
    places: &[RankPlace],
) -> String {
    let (culprits, category) = (&d.culprit_ranks, d.category);
    let at = format!("{}:{}", short_path(&b.file), b.line);
    let kinds: Vec<&str> = {
        let mut k: Vec<&DependenceItem> = b.dependence.iter().collect();
        k.sort_by_key(|d| origin_rank(d));
        // "unknown" is no reason: it only marks a part of the condition not followed.
        let mut names: Vec<&str> =
            k.iter().map(|d| d.kind.as_str()).filter(|k| *k != "unknown").collect();
        let mut seen = Vec::new();
        names.retain(|n| {
            if seen.contains(n) {
                false
            } else {
                seen.push(*n);
                true
            }
        });
        names
    };
    let because = match (&b.condition, kinds.is_empty()) {
        (Some(c), _) if b.handler_line.is_some() => {
            format!(
                " because `{c}` was raised and caught by the `except` at line {} on those ranks only",
                b.handler_line.unwrap_or(0)
            )
        }
        (Some(c), false) => format!(" because `{c}` depends on {}", kinds.join(" and ")),
        (Some(c), true) => format!("; nothing in view shows why `{c}` would differ across ranks"),
        (None, false) => format!(" ({})", kinds.join(" and ")),
        (None, true) => String::new(),
    };
    match b.construct.as_str() {
        "call" if category != Category::MetadataMismatch => waiting_at_call(b, d, &at, places),
        "origin" => format!(
            "rank(s) {culprits} pass the collective another value decided at {at} (`{}`){because}",
            b.source
        ),
        "call" => {
            let what = "with other sizes or dtypes than their peers";
            let origins: Vec<&str> =
                b.dependence.iter().take(2).map(|d| d.evidence.as_str()).collect();
            let origin = if origins.is_empty() {
                String::new()
            } else {
                format!("; {}", origins.join("; "))
            };
            // Nothing in view decided the splits: say what the dumps lack to decide it.
            let unrecorded = if unrecorded_splits(d) {
                "; Flight Recorder records each rank's total input and output sizes of an \
                 all_to_all, not its split sizes, so which rank's splits differ from what its \
                 peers expect the dumps cannot show"
            } else {
                ""
            };
            format!("rank(s) {culprits} call `{}` at {at} {what}{origin}{unrecorded}", b.source)
        }
        "continue" | "break" | "return" | "raise" => {
            let skipped = b
                .skipped_line
                .and_then(|l| {
                    module.line_text(l).map(|t| format!("skip `{}` (line {l}) via", t.trim()))
                })
                .unwrap_or_else(|| "leave the loop early via".into());
            format!("rank(s) {jumpers} {skipped} `{}` at {at}{because}", b.construct)
        }
        "except" => format!(
            "rank(s) {jumpers} took the `except` at {at} (`{}`): an exception raised on those ranks only{because}",
            b.source
        ),
        construct if category == Category::Deadlock => format!(
            "rank(s) {culprits} issue their collectives across process groups in a different order, decided by the `{construct}` at {at} (`{}`){because}",
            b.source
        ),
        construct => format!(
            "rank(s) {culprits} go a different way at the `{construct}` at {at} (`{}`){because}",
            b.source
        ),
    }
}

fn snippet(module: &Module, line: u32) -> Snippet {
    let start = line.saturating_sub(4).max(1);
    let lines: Vec<String> =
        (start..=line + 4).map_while(|l| module.line_text(l).map(str::to_owned)).collect();
    Snippet { start_line: start, marked_line: line, lines }
}

/// The entries whose stacks tell the story: the departed and the reference side at the
/// earliest mismatch, or the stuck ranks and their culprits.
fn sides<'t>(trace: &'t Trace, alignment: &Alignment, d: &Diagnosis) -> Sides<'t> {
    let mut out: Sides<'t> = Vec::new();
    if let Some(e) = &d.earliest
        && matches!(d.category, Category::Divergence | Category::MetadataMismatch)
    {
        let group = &alignment.groups[e.mismatch.pg];
        let at = |side: usize| {
            let s = &e.mismatch.sides[side];
            s.holder
                .and_then(|h| group.entries_at(trace, h, e.mismatch.seq).first().copied())
                .map(|x| (s.ranks.clone(), x))
        };
        if let Some((ranks, entry)) = e.departed.first().and_then(|&i| at(i)) {
            out.push(("departed", ranks, entry));
        }
        if let Some((ranks, entry)) = at(e.reference) {
            out.push(("reference", ranks, entry));
        }
        return out;
    }
    // Otherwise: the culprits' latest collective ("departed") and where the others wait. A
    // divergence read from a wait cycle compares the culprits with the ranks that wait for
    // them, not with the largest group (which may wait elsewhere, for someone else).
    let waits_for_culprit =
        |g: &BehaviourGroup| g.waiting_for.as_slice().iter().any(|&r| d.culprit_ranks.contains(r));
    let mut order: Vec<&BehaviourGroup> = d.groups.iter().collect();
    if d.category == Category::Divergence {
        order.sort_by_key(|g| !waits_for_culprit(g));
    }
    for g in order {
        let Position::At(at) = &g.position else { continue };
        let rank = g.ranks.as_slice()[0];
        let Some(entry) = alignment.groups[at.pg].entries_at(trace, rank, at.seq).first().copied()
        else {
            continue;
        };
        let role = if g.culprit { "departed" } else { "waiting" };
        if !out.iter().any(|(r, _, _)| *r == role) {
            out.push((role, g.ranks.clone(), entry));
        }
    }
    out
}
