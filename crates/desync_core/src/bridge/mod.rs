//! Stage 4: from the diagnosis to the training code. The stacks of the two sides are
//! compared outermost-first; where they part (same function, different lines) the Python
//! source is parsed and the construct that sends ranks different ways is named, with why its
//! condition can differ across ranks. For a metadata mismatch (same call site) the call and
//! the origin of its arguments are named instead.

mod probes;
mod sources;

use std::path::PathBuf;
use std::sync::Arc;

use desync_python::Module;

use crate::align::Alignment;
use crate::diagnose::{Category, Diagnosis, Position, short_path};
use crate::model::{Entry, Frame, RankSet, Trace};

pub use probes::{Probe, probes, probes_diff};
pub use sources::{Resolved, Resolver, SourceOptions};

/// What the bridge found in the code.
#[derive(Debug, Clone)]
pub struct CodeFinding {
    /// The deciding construct (or, for a metadata mismatch, the call).
    pub branch: Option<BranchPoint>,
    /// The stacks compared, one per side.
    pub stacks: Vec<SideStack>,
    pub explanation: String,
    /// Lines around the branch, for the report.
    pub snippet: Option<Snippet>,
    /// Paths looked at for files that were not found.
    pub not_found: Vec<NotFound>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct NotFound {
    pub file: String,
    pub tried: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct BranchPoint {
    /// As in the frames (a path on the training host).
    pub file: String,
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
    #[serde(serialize_with = "crate::report::serialize_ranks")]
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

/// Sides whose stacks are compared: (role, ranks, entry).
type Sides<'t> = Vec<(&'static str, RankSet, &'t Entry)>;

pub fn find_code(
    trace: &Trace,
    alignment: &Alignment,
    d: &Diagnosis,
    options: &SourceOptions,
) -> Option<CodeFinding> {
    let sides = sides(trace, alignment, d);
    if sides.iter().all(|(_, _, e)| e.stack().is_none()) {
        return None;
    }
    let resolver = Resolver::new(options);
    let stacks: Vec<SideStack> = sides
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
        .collect();
    let mut finding = CodeFinding {
        branch: None,
        stacks,
        explanation: String::new(),
        snippet: None,
        not_found: Vec::new(),
    };
    let culprits = d.culprit_ranks.clone();
    let departed = sides.iter().find(|(role, _, _)| *role == "departed").map(|s| s.2);
    let reference = sides.iter().find(|(role, _, _)| *role != "departed").map(|s| s.2);
    let call = |e: Option<&Entry>| e.and_then(Entry::call_site).map(|f| Target::Call(f.clone()));
    let target = match (d.category, departed, reference) {
        (Category::MetadataMismatch, dep, _) => call(dep),
        (Category::Divergence | Category::Deadlock, Some(dep), Some(reference)) => {
            parting(dep, reference).map(Target::Part)
        }
        // Stalls, crashes and hangs: the line where the others wait is what can be shown.
        (_, dep, reference) => call(reference).or_else(|| call(dep)),
    };
    let Some(target) = target else {
        finding.explanation = "the stacks share no user frame to compare".into();
        return Some(finding);
    };
    let file = target.file().clone();
    let resolved = resolver.resolve(&file);
    let Some(local) = resolved.local_path.clone() else {
        finding.not_found.push(NotFound { file: file.to_string(), tried: resolved.tried });
        finding.explanation = format!(
            "source of {} not found on this machine; pass --source-root DIR or --path-map FROM=TO",
            short_path(&file)
        );
        return Some(finding);
    };
    let Ok(text) = std::fs::read_to_string(&local) else {
        finding.not_found.push(NotFound { file: file.to_string(), tried: resolved.tried });
        finding.explanation = format!("cannot read {}", local.display());
        return Some(finding);
    };
    let module = Module::parse(&text);
    let branch = match &target {
        // Identical stacks on both sides of a deadlock: the order of the groups, not the
        // path, differs. Look for a conditional reordering around each frame, innermost first.
        Target::Part(p) if p.line_reference.is_none() && d.category == Category::Deadlock => {
            departed.and_then(|e| order_branch(e, &resolver))
        }
        Target::Part(p) => branch_at(&module, p),
        Target::Call(f) => {
            let callers = caller_modules(departed.or(reference), f, &resolver);
            Some(call_at(&module, f.line, &callers))
        }
    };
    if let Some(mut b) = branch {
        if b.file.is_empty() {
            b.file = file.to_string();
            b.local_path = Some(local);
        }
        finding.explanation = explain(&b, &culprits, &module, d.category);
        finding.snippet = Some(snippet(&module, b.line));
        finding.branch = Some(b);
    } else if let Target::Part(p) = &target {
        finding.explanation = format!(
            "the stacks part in `{}` at {}:{} vs line {}, but no branch between those lines was recognised",
            p.function,
            short_path(&file),
            p.line_departed,
            p.line_reference.map_or("?".into(), |l| l.to_string())
        );
        finding.snippet = Some(snippet(&module, p.line_departed));
    }
    Some(finding)
}

/// A conditional reordering of what a loop iterates (`if ...: reductions.reverse()`) around
/// any user frame of `entry`, innermost first, with file and local path filled in.
fn order_branch(entry: &Entry, resolver: &Resolver<'_>) -> Option<BranchPoint> {
    entry.user_frames().find_map(|f| {
        let (local, module) = parse_frame_file(resolver, &f.file)?;
        let found = module.find_order_branch(f.line)?;
        let mut point = branch_point(&found, None);
        point.file = f.file.to_string();
        point.local_path = Some(local);
        Some(point)
    })
}

/// A frame's file found on this machine and parsed.
fn parse_frame_file(resolver: &Resolver<'_>, file: &str) -> Option<(PathBuf, Module)> {
    let local = resolver.resolve(file).local_path?;
    let module = Module::parse(&std::fs::read_to_string(&local).ok()?);
    Some((local, module))
}

/// The user frames outside `frame` (outward, up to three), parsed, for following arguments.
fn caller_modules(
    entry: Option<&Entry>,
    frame: &Frame,
    resolver: &Resolver<'_>,
) -> Vec<(Module, u32)> {
    let Some(entry) = entry else { return Vec::new() };
    entry
        .user_frames()
        .skip_while(|f| *f != frame)
        .skip(1)
        .take(3)
        .map_while(|f| parse_frame_file(resolver, &f.file).map(|(_, module)| (module, f.line)))
        .collect()
}

enum Target {
    Part(Parting),
    Call(Frame),
}

impl Target {
    fn file(&self) -> &Arc<str> {
        match self {
            Self::Part(p) => &p.file,
            Self::Call(f) => &f.file,
        }
    }
}

/// Where two stacks part: the deepest common function, with each side's line in it.
#[derive(Debug, Clone)]
struct Parting {
    file: Arc<str>,
    function: Arc<str>,
    line_departed: u32,
    line_reference: Option<u32>,
}

fn parting(departed: &Entry, reference: &Entry) -> Option<Parting> {
    let d: Vec<&Frame> = departed.user_frames().collect::<Vec<_>>().into_iter().rev().collect();
    let r: Vec<&Frame> = reference.user_frames().collect::<Vec<_>>().into_iter().rev().collect();
    let mut last_common = None;
    for (a, b) in d.iter().zip(&r) {
        if a.file != b.file || a.function != b.function {
            break;
        }
        if a.line != b.line {
            return Some(Parting {
                file: a.file.clone(),
                function: a.function.clone(),
                line_departed: a.line,
                line_reference: Some(b.line),
            });
        }
        last_common = Some(*a);
    }
    // Same lines all the way: look inside the departed side's innermost frame.
    let innermost = d.last().copied().or(last_common)?;
    Some(Parting {
        file: innermost.file.clone(),
        function: innermost.function.clone(),
        line_departed: innermost.line,
        line_reference: None,
    })
}

fn branch_at(module: &Module, p: &Parting) -> Option<BranchPoint> {
    let found = module
        .find_branch(p.line_departed, p.line_reference)
        .or_else(|| p.line_reference.and_then(|r| module.find_branch(r, Some(p.line_departed))))?;
    let mut point = branch_point(&found, p.line_reference);
    // An `except` whose body jumps: the jump is what skips the collective; the handler is why.
    if let Some(jump) = found.jump
        && found.construct == desync_python::Construct::Except
    {
        point.handler_line = Some(found.line);
        point.line = jump.line;
        jump.construct.as_str().clone_into(&mut point.construct);
        module.line_text(jump.line).unwrap_or("").trim().clone_into(&mut point.source);
    }
    Some(point)
}

/// The collective call at `line` and where its arguments come from. When an argument flows
/// from a parameter of the enclosing function, the caller's frame says what was passed:
/// `callers` are the next user frames outward, read with the same resolver.
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

fn call_at(module: &Module, line: u32, callers: &[(Module, u32)]) -> BranchPoint {
    let origin = module.explain_call(line);
    let mut dependence: Vec<DependenceItem> = Vec::new();
    let mut parameters: Vec<String> = Vec::new();
    for a in origin.iter().flat_map(|o| &o.arguments) {
        parameters.extend(a.parameters.iter().cloned());
        for d in &a.dependence {
            let evidence = match a.defined_at {
                Some(at) => format!("`{}` (line {at}): {}", a.text, d.evidence),
                None => format!("`{}`: {}", a.text, d.evidence),
            };
            dependence.push(DependenceItem { kind: d.kind.as_str().to_owned(), evidence });
        }
    }
    // Follow parameters outward, one frame at a time.
    let mut inner = module.function_at(line);
    for (caller, call_line) in callers {
        let Some(function) = inner.take() else { break };
        if parameters.is_empty() {
            break;
        }
        let Some(call) = caller.explain_call(*call_line) else { break };
        let mut next = Vec::new();
        for param in std::mem::take(&mut parameters) {
            let Some(position) = function.parameters.iter().position(|p| *p == param) else {
                continue;
            };
            let keyword = format!("{param}=");
            let arg = call
                .arguments
                .iter()
                .find(|a| a.text.starts_with(&keyword))
                .or_else(|| call.arguments.get(position));
            let Some(arg) = arg else { continue };
            for d in &arg.dependence {
                let evidence = format!(
                    "`{param}` is `{}` from the caller at line {call_line}: {}",
                    arg.text, d.evidence
                );
                dependence.push(DependenceItem { kind: d.kind.as_str().to_owned(), evidence });
            }
            next.extend(arg.parameters.iter().cloned());
        }
        parameters = next;
        inner = caller.function_at(*call_line);
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

fn explain(b: &BranchPoint, culprits: &RankSet, module: &Module, category: Category) -> String {
    let at = format!("{}:{}", short_path(&b.file), b.line);
    let kinds: Vec<&str> = {
        let mut k: Vec<&DependenceItem> = b.dependence.iter().collect();
        k.sort_by_key(|d| origin_rank(d));
        let mut names: Vec<&str> = k.iter().map(|d| d.kind.as_str()).collect();
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
        (Some(c), true) => format!(" because `{c}` can evaluate differently on each rank"),
        (None, false) => format!(" ({})", kinds.join(" and ")),
        (None, true) => String::new(),
    };
    match b.construct.as_str() {
        "call" => {
            let what = if category == Category::MetadataMismatch {
                "with other sizes or dtypes than their peers"
            } else {
                "here"
            };
            let origins: Vec<&str> =
                b.dependence.iter().take(2).map(|d| d.evidence.as_str()).collect();
            let origin = if origins.is_empty() {
                String::new()
            } else {
                format!("; {}", origins.join("; "))
            };
            format!("rank(s) {culprits} call `{}` at {at} {what}{origin}", b.source)
        }
        "continue" | "break" | "return" | "raise" => {
            let skipped = b
                .skipped_line
                .and_then(|l| {
                    module.line_text(l).map(|t| format!("skip `{}` (line {l}) via", t.trim()))
                })
                .unwrap_or_else(|| "leave the loop early via".into());
            format!("rank(s) {culprits} {skipped} `{}` at {at}{because}", b.construct)
        }
        "except" => format!(
            "rank(s) {culprits} took the `except` at {at} (`{}`): an exception raised on those ranks only{because}",
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
    // Otherwise: the culprits' latest collective ("departed") and where the others wait.
    for g in &d.groups {
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
