//! Layer 5, control: paths, branches, loops, exits and handlers — which construct sends two
//! groups of ranks different ways ([`branch`]), the outline of a file's control flow
//! ([`outline`]), where a decision or a loop may be changed ([`placement`]), functions that
//! never return ([`exits`]), framework hooks a rank may leave early ([`hooks`]) and the stop
//! flags user code sets ([`flags`]). Reads every layer below; nothing below reads it.

pub(crate) mod branch;
pub(crate) mod exits;
pub(crate) mod flags;
pub(crate) mod hooks;
pub(crate) mod outline;
pub(crate) mod placement;
pub(crate) mod reducer;

use crate::syntax::module::Module;
use crate::syntax::types::Branch;
use outline::Outline;

/// The control-flow questions the bridge and the linter ask of one file.
impl Module {
    /// The construct that sends ranks at `line_a` and `line_b` of one function different ways
    /// (`line_b`: `None` when the other group's stack is not in this function).
    ///
    /// Candidates, most specific first: the `if`/`elif`/`except` whose blocks hold the two
    /// lines; an `if`/`elif`/`try`/`with suppress()` around one line only; a guarded
    /// `continue`/`break`/`return`/`raise` that skips one line and lands where the other group
    /// is; a loop around one line only. The first candidate whose condition has a known
    /// rank-dependence wins, else the first. `None` when nothing separates the lines.
    pub fn find_branch(&self, line_a: u32, line_b: Option<u32>) -> Option<Branch> {
        crate::control::branch::find(&crate::Analysis::default(), self, line_a, line_b)
    }

    /// Every candidate [`Module::find_branch`] considers, in its order of preference, with
    /// the dependence computed by `cx` (which may see the rest of the project).
    pub fn branch_candidates(
        &self,
        cx: &crate::Analysis<'_>,
        line_a: u32,
        line_b: Option<u32>,
    ) -> Vec<Branch> {
        crate::control::branch::candidates(cx, self, line_a, line_b)
    }

    /// Which block of the `if` whose header is at `if_line` holds `line`: 0 for its body,
    /// `i + 1` for its i-th `elif`/`else` clause; `None` outside its blocks.
    pub fn if_arm_holding(&self, if_line: u32, line: u32) -> Option<usize> {
        crate::control::branch::arms::arm_holding(self, if_line, line)
    }

    /// Whether the `if` at `if_line` takes the same arm on every pass of the loops around it,
    /// on any one rank: its test calls nothing and reads nothing those loops bind.
    pub fn if_decides_alike_on_every_pass(&self, if_line: u32) -> bool {
        crate::control::branch::arms::decides_alike_on_every_pass(self, if_line)
    }

    /// [`Module::guards`] with the dependence computed by `cx`.
    pub fn guards_with(&self, cx: &crate::Analysis<'_>, line: u32) -> Vec<Branch> {
        crate::control::branch::guards(cx, self, line)
    }

    /// [`Module::find_order_branch`] with the dependence computed by `cx`.
    pub fn find_order_branch_with(&self, cx: &crate::Analysis<'_>, line: u32) -> Option<Branch> {
        crate::control::branch::find_order(cx, self, line)
    }

    /// For ranks whose stacks are identical yet deadlocked (an order inversion across process
    /// groups): the `if` (or conditional expression) that reorders the list a `for` loop
    /// around `line` walks, or that swaps the process groups the call at `line` takes, so
    /// some ranks visit the groups in another order. The loop whose target binds the call's
    /// process-group argument is tried first, then the others innermost first; the first
    /// reordering whose condition shows a known rank-dependence wins, else the first one.
    /// `None` when the order cannot change (no loop, or only unconditional reorderings).
    pub fn find_order_branch(&self, line: u32) -> Option<Branch> {
        crate::control::branch::find_order(&crate::Analysis::default(), self, line)
    }

    /// Every construct that decides whether `line` runs, for the linter: guarded jumps that
    /// can skip it (nearest first), then the `if`/`elif`/loops/`try` around it (innermost
    /// first), each with its condition's rank-dependence.
    pub fn guards(&self, line: u32) -> Vec<Branch> {
        crate::control::branch::guards(&crate::Analysis::default(), self, line)
    }

    /// Imports, functions, calls, `if`s, loops and `try`s of every scope, for the linter.
    pub fn outline(&self) -> Outline {
        crate::control::outline::build(self, None)
    }

    /// [`Module::outline`] with only the calls at the given (line, column) positions: the
    /// linter needs the arguments of its collective sites, not of every call in the file
    /// (recording them all took about 8% of its time).
    pub fn outline_with_calls_at(
        &self,
        positions: &std::collections::HashSet<(u32, u32)>,
    ) -> Outline {
        crate::control::outline::build(self, Some(positions))
    }
}
