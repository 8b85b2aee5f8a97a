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
//!
//! A loop of the user's own that stops on its object's flag (`while not self.stop_requested:`,
//! where a callback elsewhere sets `trainer.stop_requested = True`) is the same decision at a
//! distance, found from the other end: the loop is on both stacks, the write on neither. When
//! a candidate's condition reads an attribute of `self` that no other class of the project
//! assigns through its own `self`, every write of that attribute outside `__init__` is where the
//! loop's answer is decided, and the conditions guarding each write are candidates that rank
//! above the loop ([`loop_flags`]).

use std::sync::Arc;

use desync_python::{Collectives, Construct, Module};

use super::candidates::{Origin, Raw, Workspace};
use crate::model::Entry;

/// A module of the user's project: the file as the training host names it, its local path,
/// the parsed module.
type ProjectModule = (String, std::path::PathBuf, Arc<Module>);

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
                let what = format!(
                    "it decides whether `{}` (line {}) runs, which issues {}{}",
                    site.callee,
                    site.line,
                    site.ops.join(", "),
                    if matches_op { ": what the departing ranks issued" } else { "" }
                );
                out.push(raw(b, &file, &local, distance + usize::from(!matches_op), what));
            }
        }
    }
    dedup(out)
}

/// The early exits of the user's per-step hook methods (`training_step` of a
/// `LightningModule`, a callback's batch hooks) that the framework entry point the stacks end
/// in (`trainer.fit(...)`) runs on every rank: a rank that returns early or raises there
/// skips, or never reaches, what the others issue next. Each exit's guards with a dependence
/// the data shows are candidates; none when no stack ends in a call of such an entry point.
pub(crate) fn hook_exits(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<Raw> {
    let entries = entry_calls(ws, sides);
    if entries.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (file, local, module) in project_modules(ws, sides) {
        for exit in ws.cx.step_hook_exits(&module) {
            let Some((at, call)) =
                entries.iter().find(|(_, qualified)| exit.entries.contains(qualified))
            else {
                continue;
            };
            let entry_point = call.rsplit('.').next().unwrap_or(call);
            let then = exit.on_none.as_deref().map(|n| format!("; {n}")).unwrap_or_default();
            // An earlier exit of the same method guards this one too; it is proposed as its
            // own exit, through its own condition.
            let guards = module.guards_with(ws.cx, exit.line).into_iter().filter(|b| {
                !matches!(
                    b.construct,
                    Construct::Return | Construct::Raise | Construct::Break | Construct::Continue
                )
            });
            for (distance, b) in guards.enumerate() {
                if !b.dependence.iter().any(|d| d.kind != desync_python::DependenceKind::Unknown)
                    || !b.agreed.is_empty()
                {
                    continue;
                }
                let note = format!(
                    "it decides whether `{}.{}` leaves early (`{}` at line {}) on a rank: `{entry_point}` ({at}) calls that hook on every rank each step, so the line is on no stack{then}",
                    exit.class, exit.method, exit.keyword, exit.line
                );
                let mut r = raw(b, &file, &local, distance, note);
                // A hook that raises, or returns what the framework raises on, ends the rank:
                // the framework's loop passes the exception on (it never skips the step).
                r.ends_rank = exit.on_none.clone().or_else(|| {
                    (exit.keyword == "raise").then(|| {
                        format!(
                            "the `raise` at line {} leaves `{}.{}` with an exception and the \
                             rank ends there",
                            exit.line, exit.class, exit.method
                        )
                    })
                });
                out.push(r);
            }
        }
    }
    dedup(out)
}

/// Functions on the stacks that their caller ran through a variable (`handler(**payload)` in
/// an event bus, `for hook in self.hooks: hook(...)`): whether they run on a rank was decided
/// where they were registered (`bus.subscribe("step_end", writer.on_step_end)`), on no stack.
/// Every line of the project that takes such a function as a value is a registration; its
/// guards whose dependence the data shows, and on which the ranks do not agree, are
/// candidates.
pub(crate) fn registrations(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<Raw> {
    let mut names: Vec<(String, String)> = Vec::new();
    for e in sides {
        let stack = super::stacks::UserStack::of(e);
        for i in 1..stack.frames.len() {
            let (caller, callee) = (stack.frames[i - 1], stack.frames[i]);
            if !stack.direct[i] {
                continue;
            }
            let Some((_, module)) = ws.module(caller) else { continue };
            let text = module.line_text(caller.line).unwrap_or("");
            let name = callee.function.to_string();
            if !desync_python::has_word(text, &name) && !names.iter().any(|(n, _)| *n == name) {
                let at = format!("{}:{}", crate::diagnose::short_path(&caller.file), caller.line);
                names.push((name, at));
            }
        }
    }
    if names.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (file, local, module) in project_modules(ws, sides) {
        for (name, at) in &names {
            for line in ws.cx.value_references(&module, name) {
                for (distance, mut b) in module.guards_with(ws.cx, line).into_iter().enumerate() {
                    through_stack_caller(ws, &mut b, &module, line, sides);
                    if !b
                        .dependence
                        .iter()
                        .any(|d| d.kind != desync_python::DependenceKind::Unknown)
                        || !b.agreed.is_empty()
                    {
                        continue;
                    }
                    let note = format!(
                        "it decides whether `{name}` is registered (line {line}), which {at} calls through a variable on the ranks that registered it: the line is on no stack"
                    );
                    out.push(raw(b, &file, &local, distance, note));
                }
            }
        }
    }
    dedup(out)
}

/// A guard off the stacks whose condition reads its function's parameters (`def build(cfg,
/// rank): if rank == ...`), followed into the call of that function a frame of the sides
/// makes (`build(cfg, rank).fit()` in `main`): what the caller passes is its dependence.
fn through_stack_caller(
    ws: &Workspace<'_>,
    b: &mut desync_python::Branch,
    module: &desync_python::Module,
    line: u32,
    sides: &[&Entry],
) {
    if b.parameters.is_empty() {
        return;
    }
    let Some(function) = module.function_at(line) else { return };
    for frame in sides.iter().flat_map(|e| e.user_frames()) {
        let Some((_, caller)) = ws.module(frame) else { continue };
        if !caller.line_text(frame.line).is_some_and(|t| desync_python::has_word(t, &function.name))
        {
            continue;
        }
        if let Some(found) = ws.cx.through_caller(
            module,
            line,
            &b.parameters,
            &b.member_reads,
            &b.length_parameters,
            &caller,
            frame.line,
        ) {
            super::candidates::merge_dependence(b, &found.dependence);
            b.agreed.extend(found.agreed);
            return;
        }
    }
}

/// The framework entry points the sides' innermost user frames call (`trainer.fit(...)` →
/// `lightning.pytorch.Trainer.fit`), with where each call is (`train.py:85`).
fn entry_calls(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for e in sides {
        // Innermost first, as Flight Recorder writes them.
        let Some(frame) = e.user_frames().next() else { continue };
        let Some((_, module)) = ws.module(frame) else { continue };
        for q in ws.cx.hook_entry_points_at(&module, frame.line) {
            if !out.iter().any(|(_, known)| *known == q) {
                let at = format!("{}:{}", crate::diagnose::short_path(&frame.file), frame.line);
                out.push((at, q));
            }
        }
    }
    out
}

/// The writes that decide a stack candidate's loop or `if` through a flag of its own object.
pub(crate) fn loop_flags(ws: &Workspace<'_>, found: &[Raw], sides: &[&Entry]) -> Vec<Raw> {
    let mut out = Vec::new();
    let mut modules = None;
    for candidate in found {
        let b = &candidate.branch;
        // Only constructs the stacks show: a write found at a distance is followed no further.
        if candidate.origin == Origin::AtADistance
            || !matches!(b.construct, Construct::While | Construct::If | Construct::Elif)
        {
            continue;
        }
        let Some(condition) = b.condition.as_deref() else { continue };
        let Some(module) = desync_python::Project::load(ws.project, &candidate.local) else {
            continue;
        };
        let Some(function) = module.function_at(b.line) else { continue };
        let (Some(receiver), Some(class)) = (function.parameters.first(), module.class_at(b.line))
        else {
            continue;
        };
        if !module.is_method(function.def_line) {
            continue;
        }
        let modules = modules.get_or_insert_with(|| project_modules(ws, sides));
        for name in attributes_read(condition, receiver) {
            let writes: Vec<(&ProjectModule, desync_python::AttributeWrite)> = modules
                .iter()
                .flat_map(|m| ws.cx.attribute_writes(&m.2, &name).into_iter().map(move |w| (m, w)))
                .collect();
            // Another class that keeps an attribute of that name makes a write through another
            // receiver ambiguous: nothing is claimed then.
            if writes.iter().any(|(_, w)| w.owner.as_ref().is_some_and(|o| *o != class)) {
                continue;
            }
            for ((file, local, m), w) in writes.iter().filter(|(_, w)| !w.initial) {
                let at = format!("{}:{}", crate::diagnose::short_path(&candidate.file), b.line);
                let guards = m.guards_with(ws.cx, w.line).into_iter();
                // The construct itself (a counter bumped inside the loop) decides nothing new.
                let others =
                    guards.filter(|g| !(same_file(local, &candidate.local) && g.line == b.line));
                for (distance, guard) in others.enumerate() {
                    let note = format!(
                        "it decides whether `{}` is set (line {}), which the `{}` at {at} reads: the line that set it is on no stack",
                        w.target,
                        w.line,
                        b.construct.as_str()
                    );
                    let mut r = raw(guard, file, local, distance, note);
                    r.decides_loop = true;
                    out.push(r);
                }
            }
        }
    }
    dedup(out)
}

/// The attributes of `receiver` a condition reads (`not self.stop and self.step < n`:
/// `stop`, `step`), method calls left out.
fn attributes_read(condition: &str, receiver: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = condition.as_bytes();
    let prefix = format!("{receiver}.");
    let mut from = 0;
    while let Some(i) = condition[from..].find(&prefix) {
        let start = from + i;
        from = start + prefix.len();
        let word_before = start > 0
            && (bytes[start - 1].is_ascii_alphanumeric()
                || bytes[start - 1] == b'_'
                || bytes[start - 1] == b'.');
        let name: String = condition[from..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let called = condition[from + name.len()..].trim_start().starts_with(['(', '.']);
        if !word_before && !name.is_empty() && !called && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

pub(super) fn raw(
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
        decides_loop: false,
        ends_rank: None,
        against: Vec::new(),
        leaves_early: false,
    }
}

/// Two paths of one file (a frame's relative path, an import's absolute one).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b
        || std::fs::canonicalize(a)
            .ok()
            .zip(std::fs::canonicalize(b).ok())
            .is_some_and(|(x, y)| x == y)
}

/// The same construct found twice is one candidate, kept at its nearest.
fn dedup(mut raws: Vec<Raw>) -> Vec<Raw> {
    raws.sort_by_key(|r| r.distance);
    let mut out: Vec<Raw> = Vec::new();
    for r in raws {
        if !out.iter().any(|o| same_file(&o.local, &r.local) && o.branch.line == r.branch.line) {
            out.push(r);
        }
    }
    out
}

/// The modules of the user's frames and those they import from the project, transitively, as
/// (file as the training host names it, local path, module).
pub(super) fn project_modules(ws: &Workspace<'_>, sides: &[&Entry]) -> Vec<ProjectModule> {
    let mut out: Vec<ProjectModule> = Vec::new();
    // (module, the frame file and local path it was reached from)
    let mut queue: Vec<(Arc<Module>, String, std::path::PathBuf)> = Vec::new();
    for e in sides {
        for f in e.user_frames() {
            if let Some((local, module)) = ws.module(f)
                && !out.iter().any(|(_, l, _)| same_file(l, &local))
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
            if out.iter().any(|(_, l, _)| same_file(l, &path)) {
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
pub(super) fn host_name(
    frame_file: &str,
    frame_local: &std::path::Path,
    local: &std::path::Path,
) -> String {
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

#[cfg(test)]
mod tests {
    use desync_python::{Analysis, FileProject};

    use super::super::sources::{Resolver, SourceOptions};
    use super::super::stacks::tests::entry;
    use super::*;

    const FIT: &str = "/venv/lib/python3.12/site-packages/lightning/pytorch/trainer/trainer.py";
    const C10D: &str = "/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py";

    /// Runs `f` against a workspace whose frames under `/job` are read from `dir`.
    fn in_workspace<T>(dir: &std::path::Path, f: impl FnOnce(&Workspace<'_>) -> T) -> T {
        let options = SourceOptions {
            path_maps: vec![("/job".to_owned(), dir.to_path_buf())],
            source_root: None,
            fallback_root: None,
            refused_fallback: None,
        };
        let resolver = Resolver::new(&options);
        let project = FileProject::new([dir.to_path_buf()]);
        let cx = Analysis::new(Some(&project));
        f(&Workspace { resolver: &resolver, project: &project, cx: &cx })
    }

    /// Both sides under `trainer.fit(...)`: the rank that stopped left a per-step hook early.
    /// The hook's guard with a data dependence is the candidate; an unguarded hook, a guard the
    /// data does not show to differ, and a method the framework never calls per step are not.
    #[test]
    fn an_early_exit_of_a_step_hook_under_the_entry_point_is_a_candidate() {
        let dir = std::env::temp_dir().join(format!("desync-hook-exits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = "\
import lightning as L
import torch

class Denoiser(L.LightningModule):
    def training_step(self, batch, batch_idx):
        noisy, clean = batch
        err = (self(noisy) - clean).abs().mean()
        if err.isnan():
            raise FloatingPointError('diverged')
        if self.hparams.frozen:
            return None
        return err

    def configure_optimizers(self):
        if self.hparams.frozen:
            return None
        return torch.optim.SGD(self.parameters(), lr=0.1)
";
        let main = "\
import lightning as L
from model import Denoiser

def run(loader):
    trainer = L.Trainer(max_epochs=3)
    trainer.fit(Denoiser(), loader)

if __name__ == '__main__':
    run(None)
";
        std::fs::write(dir.join("model.py"), model).unwrap();
        std::fs::write(dir.join("run.py"), main).unwrap();
        let run = "/job/run.py";
        let waiting = entry(&[
            ("<module>", run, 9),
            ("run", run, 6),
            ("fit", FIT, 540),
            ("all_reduce", C10D, 2800),
        ]);
        let stopped = entry(&[
            ("<module>", run, 9),
            ("run", run, 6),
            ("fit", FIT, 540),
            ("broadcast", C10D, 2700),
        ]);
        let found = in_workspace(&dir, |ws| hook_exits(ws, &[&waiting, &stopped]));
        let lines: Vec<u32> = found.iter().map(|r| r.branch.line).collect();
        assert_eq!(lines, [8], "{:?}", found.iter().map(|r| &r.note).collect::<Vec<_>>());
        let note = found[0].note.as_deref().unwrap_or_default();
        assert!(note.contains("Denoiser.training_step") && note.contains("run.py:6"), "{note}");
        // A rank that raises there is dead, not late: the next steps read how it ended.
        let ends = found[0].ends_rank.as_deref().unwrap_or_default();
        assert!(ends.contains("`raise` at line 9"), "{ends}");
        // Outside a call of the entry point, nothing is proposed.
        let elsewhere = entry(&[("run", run, 5), ("all_reduce", C10D, 2800)]);
        assert!(in_workspace(&dir, |ws| hook_exits(ws, &[&elsewhere]).is_empty()));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A handler an event bus calls through a variable runs only on the ranks that registered
    /// it: the guard of the registration is the candidate, not the guards on the stack.
    #[test]
    fn a_handler_registered_under_a_rank_guard_is_decided_at_its_registration() {
        let dir = std::env::temp_dir().join(format!("desync-registrations-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bus = "\
class Bus:
    def __init__(self):
        self.handlers = []

    def subscribe(self, fn):
        self.handlers.append(fn)

    def emit(self, **kw):
        for fn in self.handlers:
            fn(**kw)
";
        let metrics = "\
import torch.distributed as dist

class Writer:
    def on_end(self, value):
        dist.all_reduce(value)
";
        let main = "\
import torch.distributed as dist
from bus import Bus
from metrics import Writer

def main(cfg):
    rank = dist.get_rank()
    bus = Bus()
    if rank == 0:
        bus.subscribe(Writer().on_end)
    if cfg.verbose:
        bus.subscribe(print)
    for step in range(10):
        bus.emit(value=step)
        dist.barrier()
";
        std::fs::write(dir.join("bus.py"), bus).unwrap();
        std::fs::write(dir.join("metrics.py"), metrics).unwrap();
        std::fs::write(dir.join("run.py"), main).unwrap();
        let departed = entry(&[
            ("main", "/job/run.py", 13),
            ("emit", "/job/bus.py", 10),
            ("on_end", "/job/metrics.py", 5),
            ("all_reduce", C10D, 2800),
        ]);
        let waiting = entry(&[("main", "/job/run.py", 14), ("barrier", C10D, 4000)]);
        let found = in_workspace(&dir, |ws| registrations(ws, &[&departed, &waiting]));
        let lines: Vec<u32> = found.iter().map(|r| r.branch.line).collect();
        assert_eq!(lines, [8], "{:?}", found.iter().map(|r| &r.note).collect::<Vec<_>>());
        let note = found[0].note.as_deref().unwrap_or_default();
        assert!(
            note.contains("`on_end` is registered (line 9)") && note.contains("bus.py:10"),
            "{note}"
        );
        // Called by name, a function is no registration's business.
        let direct = entry(&[("main", "/job/run.py", 14), ("barrier", C10D, 4000)]);
        assert!(in_workspace(&dir, |ws| registrations(ws, &[&direct]).is_empty()));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
