//! Configuration-time divergence: both sides call the same collective from the same line, but
//! it carries another dtype or size on some ranks because something set up earlier differs: a
//! DDP comm hook registered on one node only, an autocast or mixed-precision choice read from a
//! per-host flag, a device mesh built differently. The stacks never part, so the cause is
//! searched in the user's files on the stacks and the project modules they import: calls the
//! knowledge table marks as `payload` setup, and the conditions that guard them. A condition on
//! a parameter is followed to the calls of its function elsewhere in those files (the setup
//! frames are long gone from the stacks by the time the collective runs).

use std::path::PathBuf;
use std::sync::Arc;

use desync_python::{Branch, Construct, DependenceKind, Module};

use super::candidates::{Origin, Raw, Workspace};
use crate::model::Entry;

/// Project modules looked at, at most: the stack's files and what they import, a few levels.
const MAX_FILES: usize = 64;
const IMPORT_DEPTH: usize = 3;
/// Calls followed outward from a setup function, at most this many levels.
const CALLER_DEPTH: usize = 3;

/// What differs between the sides of a metadata mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Difference {
    Dtype,
    Size,
}

impl Difference {
    fn affects(self) -> &'static [&'static str] {
        match self {
            Self::Dtype => &["dtype"],
            Self::Size => &["size", "group", "dtype"],
        }
    }
}

/// A project file: as frames name it (or as found), where it was read, parsed.
struct File {
    name: String,
    local: PathBuf,
    module: Arc<Module>,
}

/// Setup calls in the user's files, each with the guard that decides whether it runs (or the
/// call itself when its arguments differ by rank).
pub(crate) fn candidates(
    ws: &Workspace<'_>,
    entries: &[&Entry],
    difference: Difference,
) -> Vec<Raw> {
    let files = project_files(ws, entries);
    let mut out = Vec::new();
    for file in &files {
        for call in ws.cx.setup_calls(&file.module) {
            if !difference.affects().contains(&call.affects.as_str()) {
                continue;
            }
            let mut guards = file.module.guards_with(ws.cx, call.line);
            for g in &mut guards {
                follow_project_callers(ws, &files, &file.module, g, 0);
            }
            let deciding = guards.into_iter().find(shown);
            let (branch, is_call) = match deciding {
                Some(g) => (g, false),
                None if call.arguments.is_shown() => (call_branch(&file.module, &call), true),
                None => continue,
            };
            out.push(Raw {
                branch,
                file: file.name.clone(),
                local: file.local.clone(),
                origin: Origin::Setup,
                distance: 0,
                call: is_call,
                note: None,
                decides_loop: false,
                ends_rank: None,
                against: Vec::new(),
                leaves_early: false,
            });
        }
    }
    out
}

fn shown(b: &Branch) -> bool {
    b.dependence.iter().any(|d| d.kind != DependenceKind::Unknown)
}

/// The files on the stacks, then the project modules they import, breadth first.
fn project_files(ws: &Workspace<'_>, entries: &[&Entry]) -> Vec<File> {
    let mut files: Vec<File> = Vec::new();
    for e in entries {
        for f in e.user_frames() {
            if let Some((local, module)) = ws.module(f)
                && !files.iter().any(|x| x.local == local)
            {
                files.push(File { name: f.file.to_string(), local, module });
            }
        }
    }
    let mut level_start = 0;
    for _ in 0..IMPORT_DEPTH {
        let level_end = files.len();
        for i in level_start..level_end {
            for module in ws.cx.imports(&files[i].module) {
                let Some(local) = module.file_path().map(std::path::Path::to_path_buf) else {
                    continue;
                };
                if files.len() < MAX_FILES && !files.iter().any(|x| x.local == local) {
                    let name = host_name_of(&files, &local);
                    files.push(File { name, local, module });
                }
            }
        }
        level_start = level_end;
    }
    files
}

/// The path a file not on the stacks had on the training host: the folder of a stack file it
/// sits under, as the frames name that folder (`/workspace/job/launch/distributed.py` when
/// `/workspace/job/train.py` was read from `src/train.py`).
fn host_name_of(files: &[File], local: &std::path::Path) -> String {
    let known: Vec<(&str, &std::path::Path)> =
        files.iter().map(|f| (f.name.as_str(), f.local.as_path())).collect();
    host_name(&known, local)
}

/// [`host_name_of`] from (host name, local path) pairs of files known both ways.
pub(crate) fn host_name(files: &[(&str, &std::path::Path)], local: &std::path::Path) -> String {
    for (name, known) in files {
        if *known == local {
            return (*name).to_owned();
        }
        let (Some(local_dir), Some((host_dir, _))) = (known.parent(), name.rsplit_once('/')) else {
            continue;
        };
        if let Ok(rest) = local.strip_prefix(local_dir) {
            return format!("{host_dir}/{}", rest.display());
        }
    }
    local.display().to_string()
}

/// A guard whose condition flows from parameters: what the calls of its function in the
/// project's files pass for them.
fn follow_project_callers(
    ws: &Workspace<'_>,
    files: &[File],
    module: &Module,
    b: &mut Branch,
    depth: usize,
) {
    if depth >= CALLER_DEPTH || (b.parameters.is_empty() && b.length_parameters.is_empty()) {
        return;
    }
    let Some(function) = module.function_at(b.line) else { return };
    for caller in files {
        for line in caller.module.call_lines(&function.name) {
            let Some(found) = ws.cx.through_caller(
                module,
                b.line,
                &b.parameters,
                &b.member_reads,
                &b.length_parameters,
                &caller.module,
                line,
            ) else {
                continue;
            };
            let mut outer = b.clone();
            outer.dependence.clone_from(&found.dependence);
            outer.parameters.clone_from(&found.parameters);
            outer.length_parameters.clone_from(&found.length_parameters);
            outer.member_reads.clone_from(&found.member_reads);
            outer.line = line;
            follow_project_callers(ws, files, &caller.module, &mut outer, depth + 1);
            for d in outer.dependence.into_iter().filter(|d| d.kind != DependenceKind::Unknown) {
                if !b.dependence.iter().any(|x| x.kind == d.kind) {
                    b.dependence.retain(|x| x.kind != DependenceKind::Unknown);
                    b.dependence.push(d);
                }
            }
            b.agreed.extend(found.agreed);
            b.configuration.extend(found.configuration);
        }
    }
    if shown(b) {
        b.parameters.clear();
        b.length_parameters.clear();
    }
    b.dependence.sort_by_key(|d| d.kind);
}

/// The setup call itself as the deciding construct (its arguments differ by rank).
fn call_branch(module: &Module, call: &desync_python::SetupCall) -> Branch {
    Branch {
        line: call.line,
        // Shown as a call (`Raw::call`); the keyword is a placeholder.
        construct: Construct::If,
        function: module.function_at(call.line).map(|f| f.name),
        source: module.line_text(call.line).unwrap_or("").trim().to_owned(),
        condition: Some(call.source.clone()),
        condition_line: Some(call.line),
        dependence: call.arguments.dependence.clone(),
        skipped_line: None,
        jump: None,
        parameters: call.arguments.parameters.clone(),
        length_parameters: call.arguments.length_parameters.clone(),
        member_reads: call.arguments.member_reads.clone(),
        agreed: call.arguments.agreed.clone(),
        configuration: call.arguments.configuration.clone(),
        complete: call.arguments.complete,
        indirect: false,
    }
}
