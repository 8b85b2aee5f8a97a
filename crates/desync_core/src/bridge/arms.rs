//! Ruling out an `if` both sides ran the same arm of: it did not send them different ways.
//!
//! What a side is shown to have run: the lines on its own stack where it parted, and, when the
//! `if` decides alike on every pass of its loops (its test reads nothing they change), the line
//! of a collective it issued earlier from the same call of that function (FR records the stack
//! of each collective). Rank 3 at the loss `all_reduce` inside the `else` of `if stage == 0:`
//! and rank 2 past the `if`, whose previous collective came from that same `else`, both ran
//! the `else`: whatever parted them comes after it.

use super::candidates::{Raw, Workspace};
use super::stacks::UserStack;
use crate::diagnose::short_path;
use crate::model::{Entry, RankSet};
use desync_python::Construct;

/// One side of the divergence: its ranks, the entry where it parted, and what its
/// representative rank issued before that, newest first.
pub(crate) struct SideRecord<'t> {
    pub ranks: RankSet,
    pub at: &'t Entry,
    pub earlier: Vec<&'t Entry>,
}

/// Marks each `if` candidate both sides are shown to have run the same arm of.
pub(crate) fn rule_out_shared_arms(
    ws: &Workspace<'_>,
    raws: &mut [Raw],
    sides: &[SideRecord<'_>; 2],
) {
    for raw in raws.iter_mut().filter(|r| r.branch.construct == Construct::If) {
        let Some(module) = desync_python::Project::load(ws.project, &raw.local) else { continue };
        let function = raw.branch.function.as_deref().unwrap_or("<module>");
        let shown: Vec<Option<(usize, String)>> = sides
            .iter()
            .map(|side| arm_shown(&module, &raw.file, function, raw.branch.line, side))
            .collect();
        if let [Some((a, why_a)), Some((b, why_b))] = &shown[..]
            && a == b
        {
            raw.against.push(format!(
                "both sides ran the same block of it, so it did not part them: {why_a}; {why_b}"
            ));
        }
    }
}

/// The arm of the `if` at `if_line` (in `function` of `file`) that a side is shown to have
/// run, with how it is shown.
fn arm_shown(
    module: &desync_python::Module,
    file: &str,
    function: &str,
    if_line: u32,
    side: &SideRecord<'_>,
) -> Option<(usize, String)> {
    let here = UserStack::of(side.at);
    let index = here.frames.iter().rposition(|f| &*f.file == file && &*f.function == function)?;
    let line = here.frames[index].line;
    if let Some(arm) = module.if_arm_holding(if_line, line) {
        return Some((
            arm,
            format!("rank(s) {} at {}:{line} (its stack)", side.ranks, short_path(file)),
        ));
    }
    if !module.if_decides_alike_on_every_pass(if_line) {
        return None;
    }
    // An earlier collective from the same call: the frames around the function's are the
    // same ones at the same lines.
    side.earlier.iter().find_map(|e| {
        let there = UserStack::of(e);
        let frame = there.frames.get(index)?;
        let same_call = there.frames.len() > index
            && there.frames[..index] == here.frames[..index]
            && frame.file == here.frames[index].file
            && frame.function == here.frames[index].function;
        if !same_call {
            return None;
        }
        let arm = module.if_arm_holding(if_line, frame.line)?;
        Some((
            arm,
            format!(
                "rank(s) {} issued seq {} of pg {} from {}:{} before, and the test reads nothing its loop changes",
                side.ranks,
                e.collective_seq_id,
                e.call.pg_name,
                short_path(file),
                frame.line
            ),
        ))
    })
}
