//! Counts decided at a distance (docs/diagnosis.md). How many collectives or messages a rank
//! issues can be a value handed over: a loop's trip count, a pipelining schedule's microbatch
//! count (a `[[count_argument]]` row of the knowledge table). When a rank-local filter decided
//! that value ([`desync_python::Analysis::count_origins`], by data flow), the filter is what
//! sent the rank another way, and it comes before the construct that only carries the count.
//!
//! Which counts are in play: a loop's, when a frame of either side is inside it (the loop
//! issued the collectives the ranks part in); a table argument's wherever the project passes
//! one (the schedule's exchanges are point-to-point messages Gloo does not record: no stack
//! shows them).

use std::path::Path;

use desync_python::CountOrigin;

use super::candidates::Workspace;
use super::{BranchPoint, Candidate, DependenceItem};
use crate::model::Entry;

/// How far above the construct that carries the count the filter ranks.
const ABOVE: i32 = 5;

/// A count origin as a candidate, with the line of the construct that uses the count (its
/// local file and line), for placing it above that construct's own candidate.
pub(crate) struct CountCandidate {
    pub candidate: Candidate,
    pub counted_local: std::path::PathBuf,
    pub counted_line: u32,
    pub loop_count: bool,
}

/// Every count of the project the sides' frames reach whose value a rank-local filter decided.
pub(crate) fn candidates(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<CountCandidate> {
    let project = super::distance::project_modules(ws, sides);
    let modules: Vec<_> = project.iter().map(|(_, _, m)| m.clone()).collect();
    let frames: Vec<(std::path::PathBuf, u32)> = sides
        .iter()
        .flat_map(|e| e.user_frames())
        .filter_map(|f| ws.module(f).map(|(local, _)| (local, f.line)))
        .collect();
    let on_stack: Vec<(&str, &Path)> =
        project.iter().map(|(file, local, _)| (file.as_str(), local.as_path())).collect();
    let mut out = Vec::new();
    for found in ws.cx.count_origins(&modules) {
        let Some(counted_local) = local_of(&project, &found.counted_module) else { continue };
        let Some(local) = local_of(&project, &found.module) else { continue };
        // A loop's count matters where the ranks are in that loop.
        if found.loop_count
            && !frames.iter().any(|(l, line)| {
                same_file(l, &counted_local)
                    && (found.counted_line..=found.counted_last).contains(line)
            })
        {
            continue;
        }
        let file = super::setup::host_name(&on_stack, &local);
        out.push(CountCandidate {
            candidate: candidate(&found, file, local),
            counted_local,
            counted_line: found.counted_line,
            loop_count: found.loop_count,
        });
    }
    out
}

/// Places each count's candidate: just above the candidate of the loop that carries its count
/// when one is there, else above `call` (the line the ranks wait at), ranked by score.
pub(crate) fn place(found: &mut Vec<Candidate>, counts: Vec<CountCandidate>, call: Option<i32>) {
    for mut c in counts {
        let carrier = found.iter().position(|x| {
            x.branch.line == c.counted_line
                && x.branch.local_path.as_deref().is_some_and(|l| same_file(l, &c.counted_local))
        });
        let at = match carrier {
            Some(i) => {
                c.candidate.score = found[i].score + ABOVE;
                i
            }
            None if c.loop_count => continue,
            None => {
                c.candidate.score = call.unwrap_or(60).max(60) + ABOVE;
                found.iter().position(|x| x.score < c.candidate.score).unwrap_or(found.len())
            }
        };
        if !found.iter().any(|x| {
            x.branch.line == c.candidate.branch.line && x.branch.file == c.candidate.branch.file
        }) {
            found.insert(at, c.candidate);
        }
    }
}

fn candidate(found: &CountOrigin, file: String, local: std::path::PathBuf) -> Candidate {
    let mut evidence_for = vec![format!(
        "it decides {}: {}",
        found.counted,
        found
            .path
            .iter()
            .map(String::as_str)
            .chain([found.decided_by.as_str()])
            .collect::<Vec<_>>()
            .join(" ← ")
    )];
    evidence_for.push(found.why.clone());
    Candidate {
        branch: BranchPoint {
            file,
            local_path: Some(local),
            line: found.line,
            function: found.function.clone(),
            construct: "origin".into(),
            source: found.source.clone(),
            condition: Some(found.decided_by.clone()),
            condition_line: Some(found.line),
            dependence: vec![DependenceItem {
                kind: desync_python::DependenceKind::LocalData.as_str().to_owned(),
                evidence: found.why.clone(),
            }],
            skipped_line: None,
            handler_line: None,
        },
        score: 0,
        evidence_for,
        evidence_against: Vec::new(),
        origin: "value_origin",
        ends_rank: None,
    }
}

fn local_of(
    project: &[(String, std::path::PathBuf, std::sync::Arc<desync_python::Module>)],
    module: &std::sync::Arc<desync_python::Module>,
) -> Option<std::path::PathBuf> {
    project
        .iter()
        .find(|(_, _, m)| std::sync::Arc::ptr_eq(m, module))
        .map(|(_, l, _)| l.clone())
        .or_else(|| module.file_path().map(Path::to_path_buf))
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok().zip(b.canonicalize().ok()).is_some_and(|(x, y)| x == y)
}
