//! Configuration-time divergence: both sides call the same collective from the same line, but
//! it carries another dtype or size on some ranks because something set up earlier differs: a
//! DDP comm hook registered on one node only, an autocast or mixed-precision choice read from a
//! per-host flag, a device mesh built differently. The stacks never part, so the cause is
//! searched in the user's files on the stacks (and the project modules they import): calls the
//! knowledge table marks as `payload` setup, and the conditions that guard them.

use std::collections::HashSet;
use std::path::PathBuf;
use std::rc::Rc;

use desync_python::{Branch, Construct, DependenceKind, Module};

use super::candidates::{Origin, Raw, Workspace};
use crate::model::Entry;

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

/// Setup calls in the user's files on the sides' stacks, each with the guard that decides
/// whether it runs (or the call itself when its arguments differ by rank).
pub(crate) fn candidates(ws: &Workspace<'_>, entries: &[&Entry], difference: Difference) -> Vec<Raw> {
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut files: Vec<(String, PathBuf, Rc<Module>)> = Vec::new();
    for e in entries {
        for f in e.user_frames() {
            if let Some((local, module)) = ws.module(&f.file)
                && seen.insert(local.clone())
            {
                files.push((f.file.to_string(), local, module));
            }
        }
    }
    let mut out = Vec::new();
    for (file, local, module) in &files {
        for call in ws.cx.setup_calls(module) {
            if !difference.affects().contains(&call.affects.as_str()) {
                continue;
            }
            let guards = module.guards_with(ws.cx, call.line);
            let deciding = guards.into_iter().find(|g| g.dependence.iter().any(|d| d.kind != DependenceKind::Unknown));
            let branch = match deciding {
                Some(g) => g,
                None if call.arguments.is_shown() => call_branch(module, &call),
                None => continue,
            };
            let call = branch.line == call.line && branch.condition.as_deref() == Some(call.source.as_str());
            out.push(Raw { branch, file: file.clone(), local: local.clone(), origin: Origin::Setup, distance: 0, call });
        }
    }
    out
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
        agreed: call.arguments.agreed.clone(),
        configuration: call.arguments.configuration.clone(),
        complete: call.arguments.complete,
    }
}
