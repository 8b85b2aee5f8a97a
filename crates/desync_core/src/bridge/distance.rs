//! Decisions taken at a distance. When the two sides' user stacks are the same and the ranks
//! part only inside a framework (both under one `trainer.fit(...)` line), the line that decided
//! is on no stack: a hook set a flag the framework's loop reads later
//! (`trainer.should_stop = True` on one rank), or queued a collective the framework issues
//! later (`self.log(..., sync_dist=True)` under `if self.trainer.is_global_zero:`).
//!
//! Candidates then come from the user's project — the modules the frames' files import,
//! followed transitively — : every write of a stop flag of the knowledge table (role `stop`)
//! and every collective site, each with the conditions that decide whether it runs. A site's
//! guard is kept only when the data shows why it can differ across ranks; a flag write's
//! guards always are (setting the flag on one rank is the divergence whatever the condition
//! reads). They are scored like the stacks' candidates, from a lower base.

use std::sync::Arc;

use desync_python::{Collectives, Module};

use super::candidates::{Origin, Raw, Workspace};
use crate::model::Entry;

/// The most project modules read when looking at a distance.
const MAX_MODULES: usize = 200;

/// Every candidate at a distance from the user's code both sides' frames run.
pub(crate) fn candidates(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<Raw> {
    let departed_ops: Vec<&str> = sides.first().map(|e| vec![&*e.op().name]).unwrap_or_default();
    let mut out = Vec::new();
    let collectives = Collectives::new(ws.cx);
    for (file, local, module) in project_modules(ws, sides) {
        for write in ws.cx.stop_flag_writes(&module) {
            let framework = write.flag.split('.').next().unwrap_or("the framework").to_owned();
            for (distance, b) in module.guards_with(ws.cx, write.line).into_iter().enumerate() {
                let note = format!(
                    "it decides whether `{}` is set (line {}): {framework}'s loop stops on a rank that sets it, at its next check, so the line is on no stack",
                    write.target, write.line
                );
                out.push(raw(b, &file, &local, distance, note));
            }
        }
        for site in collectives.sites(&module) {
            let matches_op = site.ops.iter().any(|op| departed_ops.contains(&op.as_str()));
            for (distance, b) in module.guards_with(ws.cx, site.line).into_iter().enumerate() {
                if !b.dependence.iter().any(|d| d.kind != desync_python::DependenceKind::Unknown)
                    || !b.agreed.is_empty()
                {
                    continue;
                }
                let what = if matches_op {
                    format!(
                        "it decides whether `{}` (line {}) runs, which issues {}: what the departing ranks issued",
                        site.callee,
                        site.line,
                        site.ops.join(", ")
                    )
                } else {
                    format!(
                        "it decides whether `{}` (line {}) runs, which issues {}",
                        site.callee,
                        site.line,
                        site.ops.join(", ")
                    )
                };
                out.push(raw(b, &file, &local, distance + usize::from(!matches_op), what));
            }
        }
    }
    dedup(out)
}

fn raw(
    branch: desync_python::Branch,
    file: &str,
    local: &std::path::Path,
    distance: usize,
    note: String,
) -> Raw {
    Raw {
        branch,
        file: file.to_owned(),
        local: local.to_path_buf(),
        origin: Origin::AtADistance,
        distance,
        call: false,
        note: Some(note),
    }
}

/// The same construct found twice is one candidate, kept at its nearest.
fn dedup(mut raws: Vec<Raw>) -> Vec<Raw> {
    raws.sort_by_key(|r| r.distance);
    let mut out: Vec<Raw> = Vec::new();
    for r in raws {
        if !out.iter().any(|o| o.local == r.local && o.branch.line == r.branch.line) {
            out.push(r);
        }
    }
    out
}

/// The modules of the user's frames and those they import from the project, transitively, as
/// (file as the training host names it, local path, module).
fn project_modules(
    ws: &Workspace<'_>,
    sides: &[&Entry],
) -> Vec<(String, std::path::PathBuf, Arc<Module>)> {
    let mut out: Vec<(String, std::path::PathBuf, Arc<Module>)> = Vec::new();
    // (module, the frame file and local path it was reached from)
    let mut queue: Vec<(Arc<Module>, String, std::path::PathBuf)> = Vec::new();
    for e in sides {
        for f in e.user_frames() {
            if let Some((local, module)) = ws.module(f)
                && !out.iter().any(|(_, l, _)| *l == local)
            {
                out.push((f.file.to_string(), local.clone(), module.clone()));
                queue.push((module, f.file.to_string(), local));
            }
        }
    }
    while let Some((module, frame_file, frame_local)) = queue.pop() {
        for imported in ws.cx.imports(&module) {
            if out.len() >= MAX_MODULES {
                return out;
            }
            let Some(path) = imported.file_path().map(std::path::Path::to_path_buf) else {
                continue;
            };
            if out.iter().any(|(_, l, _)| *l == path) {
                continue;
            }
            let file = host_name(&frame_file, &frame_local, &path);
            out.push((file.clone(), path.clone(), imported.clone()));
            queue.push((imported, file, path));
        }
    }
    out
}

/// The path the training host would give `local`, a file of the project found here, by the
/// mapping of a frame it was reached from: `/w/job/train.py` read as `src/train.py` makes
/// `src/callbacks/stop.py` `/w/job/callbacks/stop.py`. The local path when no folder above the
/// frame's holds it.
fn host_name(frame_file: &str, frame_local: &std::path::Path, local: &std::path::Path) -> String {
    let mut host = std::path::Path::new(frame_file).parent();
    let mut here = frame_local.parent();
    while let (Some(h), Some(l)) = (host, here) {
        if let Ok(rest) = local.strip_prefix(l) {
            return h.join(rest).display().to_string();
        }
        (host, here) = (h.parent(), l.parent());
    }
    local.display().to_string()
}
