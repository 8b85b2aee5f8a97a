//! Ways out before the line the others wait at. A rank that is not where its peers wait left
//! the functions on their stack early: a guarded `return` or `raise` above the waiting line,
//! or a call above it that ends the process (`sys.exit` in a validation helper, reached
//! through the project's own calls). The line that decided is on no stack: the leaving rank
//! moved on (or ended), and the waiters never took it.
//!
//! Offered where the dumps show the leaving:
//! - a crash (the culprits ended): the raises and process exits above each waiting frame's
//!   line, in that frame's function or the project functions it called there;
//! - a divergence whose departed ranks are further along the function where the sides part
//!   than the call the others are still inside: they came out of that call early, and every
//!   exit above the waiting lines inside it is a way they did.

use super::candidates::{Origin, Raw, Workspace};
use super::stacks::UserStack;
use crate::model::Entry;

/// Exits above the lines of `waiting`'s user frames from `from` inward (outermost first);
/// `only_ending`: raises and process exits only (a `return` ends no rank). An exit `known`
/// already proposes (a guarded `return` found where the stacks part, or guarding a frame only
/// one side has) is that candidate, marked as a way out the dumps show taken, not a second
/// candidate beside it: two candidates for one exit would let its guard outrank the exit.
pub(crate) fn before_waiting(
    ws: &Workspace<'_>,
    waiting: &Entry,
    from: usize,
    only_ending: bool,
    known: &mut [Raw],
) -> Vec<Raw> {
    let stack = UserStack::of(waiting);
    let n = stack.frames.len();
    let mut out = Vec::new();
    for i in from..n {
        let frame = stack.frames[i];
        let Some((local, module)) = ws.module(frame) else { continue };
        let function = module.function_at(frame.line).map(|f| f.name).unwrap_or_default();
        for exit in ws.cx.exits_before(&module, frame.line) {
            if only_ending && exit.how == "return" {
                continue;
            }
            let there = exit.module.clone().unwrap_or_else(|| module.clone());
            let there_local =
                there.file_path().map_or_else(|| local.clone(), std::path::Path::to_path_buf);
            let file = super::distance::host_name(&frame.file, &local, &there_local);
            let proposed = known.iter_mut().find(|r| {
                r.local == there_local
                    && (r.branch.line == exit.line
                        || r.branch.jump.as_ref().is_some_and(|j| j.line == exit.line))
            });
            if let Some(candidate) = proposed {
                candidate.leaves_early = true;
                continue;
            }
            let ends = exit.how != "return";
            for (k, guard) in there.guards_with(ws.cx, exit.line).into_iter().enumerate() {
                let note = format!(
                    "a rank it lets through leaves `{function}` early (`{}` at {}:{}) before line {}, where the others wait: the line is on no stack",
                    exit.how,
                    crate::diagnose::short_path(&file),
                    exit.line,
                    frame.line
                );
                let mut r = Raw {
                    branch: guard,
                    file: file.clone(),
                    local: there_local.clone(),
                    origin: Origin::AtADistance,
                    distance: (n - 1 - i) + exit.depth + k,
                    call: false,
                    note: Some(note),
                    decides_loop: false,
                    ends_rank: None,
                    against: Vec::new(),
                    leaves_early: true,
                };
                if ends {
                    r.ends_rank = Some(format!(
                        "`{}` at {}:{} ends the rank there",
                        exit.how,
                        crate::diagnose::short_path(&file),
                        exit.line
                    ));
                }
                out.push(r);
            }
        }
    }
    out
}

/// For ranks that ended having issued fewer collectives than their peers
/// (`logs/ended.rs`): the guarded jumps (`continue`, `break`, `return`) that skip the lines of
/// `waiting`'s user frames, innermost frame first and nearest first. A rank that takes one in
/// the loop that issues the collectives issues fewer of them and leaves the loop early; its
/// collectives pair with its peers' of a later pass until it runs out, so the line that
/// decided is on no stack and the call the others wait at is only where it showed.
pub(crate) fn skipping_jumps(ws: &Workspace<'_>, waiting: &Entry) -> Vec<Raw> {
    use desync_python::Construct;
    let stack = UserStack::of(waiting);
    let mut out = Vec::new();
    for (depth, frame) in stack.frames.iter().rev().enumerate() {
        let Some((local, module)) = ws.module(frame) else { continue };
        let jumps = module.guards_with(ws.cx, frame.line).into_iter().filter(|b| {
            matches!(b.construct, Construct::Continue | Construct::Break | Construct::Return)
        });
        for (k, jump) in jumps.enumerate() {
            let note = format!(
                "a rank it lets through skips line {} (where the others wait) and what follows it in that pass: it issues fewer collectives than its peers, and ends short of them",
                frame.line
            );
            out.push(Raw {
                branch: jump,
                file: frame.file.to_string(),
                local: local.clone(),
                origin: Origin::Parting,
                distance: depth + k,
                call: false,
                note: Some(note),
                decides_loop: false,
                ends_rank: None,
                against: Vec::new(),
                leaves_early: true,
            });
        }
    }
    out
}
