//! `find_branch`: the control-flow construct that sends two groups of ranks different ways.
//!
//! Group A's stack is at `line_a` of a function; group B's is at `line_b` of the same function,
//! or nowhere in it (`None`: it never came in, or it left). The candidates, most specific first:
//!
//! 1. Both lines in different blocks of one statement: that `if`/`elif`, or the `except` of a
//!    `try` (rank ran the body vs. the handler).
//! 2. One line inside an `if`/`elif`/`try`/`with suppress(...)` that the other group's line
//!    sits beside: that statement (an extra logging collective under `if rank == 0:`).
//! 3. A guarded `continue`/`break`/`return`/`raise` that can skip one line and lands where the
//!    other group is (`if not torch.isfinite(loss): continue` before `loss.backward()`).
//! 4. A `with` around both lines whose manager a condition chooses
//!    (`with nullcontext() if sync_now else model.no_sync():`): the same statements issue
//!    different collectives under either manager (DDP's backward all-reduces or not).
//! 5. A loop around one line but not the other: its header (ragged data, `while step < n_local`).
//!
//! With no `line_b`, guarded jumps come first, then the statements around `line_a`, innermost
//! first. Among the candidates, the first whose condition shows a known rank-dependence wins,
//! or else the first one: a condition on `rank` beats an `if` on a flag we cannot see through.

pub(crate) mod arms;
mod describe;
mod jumps;
mod order;
mod structure;

use ruff_python_ast::{ExceptHandler, Expr, Stmt, StmtIf, StmtTry, StmtWith};
use ruff_text_size::Ranged;
use rustc_hash::FxHashMap as HashMap;

use crate::syntax::module::Module;
use crate::syntax::tree::Path;
use crate::syntax::types::{Branch, Construct, DependenceKind, Jump};
use crate::values::Analysis;

/// How many candidates are described before giving up on finding an informative one.
const MAX_CANDIDATES: usize = 16;

/// The `if` clause or `except` body a jump sits in.
#[derive(Clone, Copy)]
pub(super) enum Guard<'a> {
    /// `clause`: `None` for the `if` body, `Some(i)` for the i-th `elif`/`else` clause.
    If {
        stmt: &'a StmtIf,
        clause: Option<usize>,
    },
    Handler {
        stmt: &'a StmtTry,
        index: usize,
    },
}

/// A guarded jump statement.
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    pub stmt: &'a Stmt,
    /// The line of `stmt`.
    pub line: u32,
    pub construct: Construct,
    pub guard: Guard<'a>,
}

/// The statement that decides between the groups' paths.
#[derive(Clone, Copy)]
pub(super) enum Decider<'a> {
    /// `clause`: `None` for the `if` header, `Some(i)` for the i-th `elif`.
    If {
        stmt: &'a StmtIf,
        clause: Option<usize>,
    },
    Loop(&'a Stmt),
    Except {
        stmt: &'a StmtTry,
        handler: usize,
    },
    With(&'a StmtWith),
    /// `with a if c else b:` around both groups' lines: the manager chosen by `test` changes
    /// what the body's statements issue (`model.no_sync()` against `nullcontext()`).
    ChosenContext {
        stmt: &'a StmtWith,
        test: &'a Expr,
    },
    Jump(Target<'a>),
}

/// A possible answer and the line it makes one group skip.
#[derive(Clone, Copy)]
pub(super) struct Candidate<'a> {
    pub decider: Decider<'a>,
    pub skipped_line: Option<u32>,
    /// See [`Branch::indirect`](crate::Branch::indirect).
    pub indirect: bool,
}

impl<'a> Candidate<'a> {
    pub(super) fn jump(target: Target<'a>, skipped: u32) -> Self {
        Candidate { decider: Decider::Jump(target), skipped_line: Some(skipped), indirect: false }
    }
}

/// Every construct that can send the ranks at `line_a` and `line_b` different ways, most
/// specific first (see the module's doc), each described with its condition's dependence.
pub(crate) fn candidates(
    cx: &Analysis<'_>,
    module: &Module,
    line_a: u32,
    line_b: Option<u32>,
) -> Vec<Branch> {
    let Some(path_a) = module.path(line_a) else { return Vec::new() };
    let sites = jumps::sites(module, scope_suite(module, &path_a));
    let path_b = line_b
        .filter(|b| *b != line_a)
        .and_then(|b| module.path(b))
        .filter(|pb| same_function(module, &path_a, pb));

    let mut candidates = Vec::new();
    if let Some(path_b) = &path_b {
        let split = structure::split(module, &path_a, path_b);
        candidates.extend(split.decisive);
        candidates.extend(jumps::skipping(&sites, &path_a, Some(path_b)));
        candidates.extend(jumps::skipping(&sites, path_b, Some(&path_a)));
        candidates.extend(split.contexts);
        candidates.extend(split.loops);
    } else {
        // The same line for both groups means shifted streams: someone skipped a whole pass.
        let other = (line_b == Some(line_a)).then_some(&path_a);
        candidates.extend(jumps::skipping(&sites, &path_a, other));
        candidates.extend(structure::enclosing(module, &path_a));
    }

    candidates.iter().take(MAX_CANDIDATES).map(|c| describe::branch(cx, module, c)).collect()
}

/// The first candidate whose condition shows a reason to differ across ranks, else the first.
pub(crate) fn find(
    cx: &Analysis<'_>,
    module: &Module,
    line_a: u32,
    line_b: Option<u32>,
) -> Option<Branch> {
    let all = candidates(cx, module, line_a, line_b);
    all.iter().find(|b| informative(b)).or(all.first()).cloned()
}

/// Every construct that decides whether `line` runs: guarded jumps that can skip it (nearest
/// first), then the statements around it (innermost first).
pub(crate) fn guards(cx: &Analysis<'_>, module: &Module, line: u32) -> Vec<Branch> {
    GuardFinder::new(module).guards_where(cx, line, &mut |_| true)
}

/// [`guards`] asked for many lines of one module: each function's jump statements are found
/// once, and a guard is described only when `wanted` accepts its line (asked before the
/// costly part), so a function with thousands of exits before its collectives stays linear
/// per question rather than finding and describing every exit again for every collective.
pub struct GuardFinder<'m> {
    module: &'m Module,
    /// The jump statements of each function body (or the module's), by the suite's address.
    sites: HashMap<*const Stmt, jumps::SiteIndex<'m>>,
}

impl<'m> GuardFinder<'m> {
    pub fn new(module: &'m Module) -> Self {
        GuardFinder { module, sites: HashMap::default() }
    }

    /// The guards of `line` ([`Module::guards_with`]) whose line `wanted` accepts. A line
    /// `wanted` refused once must stay refused for this finder (the lint's set of jumps already
    /// judged only grows for them): those jumps are not visited again.
    pub fn guards_where(
        &mut self,
        cx: &Analysis<'_>,
        line: u32,
        wanted: &mut dyn FnMut(u32) -> bool,
    ) -> Vec<Branch> {
        let module = self.module;
        let Some(path) = module.path(line) else { return Vec::new() };
        let suite = scope_suite(module, &path);
        let sites = self
            .sites
            .entry(suite.as_ptr())
            .or_insert_with(|| jumps::SiteIndex::new(module, jumps::sites(module, suite)));
        sites
            .skipping(module, &path, wanted)
            .into_iter()
            .chain(structure::enclosing(module, &path))
            .filter(|c| wanted(describe::line(module, c)))
            .map(|c| describe::branch(cx, module, &c))
            .collect()
    }
}

/// The `if` that reorders the list a loop around `line` walks (see [`order`]).
pub(crate) fn find_order(cx: &Analysis<'_>, module: &Module, line: u32) -> Option<Branch> {
    order::find(cx, module, line)
}

/// The first jump directly in an `except` body (the `continue` of `except E: log(); continue`).
pub(crate) fn handler_jump_of(module: &Module, handler: &ExceptHandler) -> Option<Jump> {
    let stmt = jumps::handler_jump(handler)?;
    let construct = match stmt {
        Stmt::Continue(_) => Construct::Continue,
        Stmt::Break(_) => Construct::Break,
        Stmt::Return(_) => Construct::Return,
        Stmt::Raise(_) => Construct::Raise,
        _ => return None,
    };
    Some(Jump { construct, line: module.line_of(stmt.start()) })
}

/// A condition with a known reason to differ across ranks.
fn informative(branch: &Branch) -> bool {
    branch.dependence.iter().any(|d| d.kind != DependenceKind::Unknown)
}

/// The statements of the function around the path (or of the module).
fn scope_suite<'a>(module: &'a Module, path: &Path<'a>) -> &'a [Stmt] {
    match path.innermost_function(module) {
        Some(def) => &def.body,
        None => module.body(),
    }
}

fn same_function(module: &Module, a: &Path<'_>, b: &Path<'_>) -> bool {
    match (a.innermost_function(module), b.innermost_function(module)) {
        (Some(fa), Some(fb)) => std::ptr::eq(fa, fb),
        (None, None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
