//! Statement-level navigation over Ruff's AST: the chain of statements around a line
//! ([`Path`]), the blocks of a compound statement ([`blocks`]) and a scope walk that stays out of
//! nested `def`s and `class`es ([`walk_scope`]).
//!
//! Every walk stops at [`MAX_DEPTH`] nested blocks: Ruff grows its stack for deep input, but our
//! own recursion must not overflow on generated or hostile files.

use ruff_python_ast::{ExceptHandler, Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};
use smallvec::{SmallVec, smallvec};

use crate::syntax::module::Module;

/// Nesting depth past which walks stop looking (real training code stays far below).
pub(crate) const MAX_DEPTH: usize = 200;

/// Which block of a compound statement a suite is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The main body (of `if`, loops, `try`, `with`, `def`, `class`).
    Body,
    /// The i-th `elif`/`else` clause of an `if`.
    Clause(usize),
    /// The i-th `except` handler of a `try`.
    Handler(usize),
    /// The `else` block of a loop or a `try`.
    OrElse,
    /// The `finally` block of a `try`.
    Finally,
    /// The i-th `case` of a `match`.
    Case(usize),
}

/// One block of a compound statement.
#[derive(Clone, Copy)]
pub(crate) struct Block<'a> {
    pub slot: Slot,
    pub suite: &'a [Stmt],
}

/// The blocks of a statement, inline (asked of every statement of every walk: a heap vector
/// each time was a tenth of the linter's allocations).
pub(crate) type Blocks<'a> = SmallVec<[Block<'a>; 4]>;

/// The expressions of a statement's header, inline (see [`Blocks`]).
pub(crate) type HeaderExprs<'a> = SmallVec<[&'a Expr; 4]>;

/// The blocks of `stmt` in source order; empty for simple statements.
#[inline]
pub(crate) fn blocks(stmt: &Stmt) -> Blocks<'_> {
    // Most statements are simple: inlined, their empty answer costs the walks nothing
    // (built and returned out of line, it was copied out on every statement of every walk).
    if !matches!(
        stmt,
        Stmt::If(_)
            | Stmt::For(_)
            | Stmt::While(_)
            | Stmt::Try(_)
            | Stmt::With(_)
            | Stmt::Match(_)
            | Stmt::FunctionDef(_)
            | Stmt::ClassDef(_)
    ) {
        return SmallVec::new();
    }
    compound_blocks(stmt)
}

/// [`blocks`] of a compound statement.
#[inline(never)]
fn compound_blocks(stmt: &Stmt) -> Blocks<'_> {
    fn block(slot: Slot, suite: &[Stmt]) -> Block<'_> {
        Block { slot, suite }
    }
    match stmt {
        Stmt::If(s) => std::iter::once(block(Slot::Body, &s.body[..]))
            .chain(
                s.elif_else_clauses
                    .iter()
                    .enumerate()
                    .map(|(i, c)| block(Slot::Clause(i), &c.body)),
            )
            .collect(),
        Stmt::For(s) => smallvec![block(Slot::Body, &s.body), block(Slot::OrElse, &s.orelse)],
        Stmt::While(s) => smallvec![block(Slot::Body, &s.body), block(Slot::OrElse, &s.orelse)],
        Stmt::Try(s) => std::iter::once(block(Slot::Body, &s.body[..]))
            .chain(s.handlers.iter().enumerate().map(|(i, h)| {
                let ExceptHandler::ExceptHandler(h) = h;
                block(Slot::Handler(i), &h.body)
            }))
            .chain([block(Slot::OrElse, &s.orelse), block(Slot::Finally, &s.finalbody)])
            .collect(),
        Stmt::With(s) => smallvec![block(Slot::Body, &s.body)],
        Stmt::Match(s) => {
            s.cases.iter().enumerate().map(|(i, c)| block(Slot::Case(i), &c.body)).collect()
        }
        Stmt::FunctionDef(s) => smallvec![block(Slot::Body, &s.body)],
        Stmt::ClassDef(s) => smallvec![block(Slot::Body, &s.body)],
        _ => SmallVec::new(),
    }
}

/// The expressions a statement evaluates itself, without its blocks: the whole of a simple
/// statement, the header of a compound one (`if` tests, `for` iterable, `with` items).
pub(crate) fn header_exprs(stmt: &Stmt) -> HeaderExprs<'_> {
    match stmt {
        Stmt::Expr(s) => smallvec![&*s.value],
        Stmt::Assign(s) => s.targets.iter().chain([&*s.value]).collect(),
        Stmt::AugAssign(s) => smallvec![&*s.target, &*s.value],
        Stmt::AnnAssign(s) => std::iter::once(&*s.target).chain(s.value.as_deref()).collect(),
        Stmt::Return(s) => s.value.as_deref().into_iter().collect(),
        Stmt::Raise(s) => s.exc.as_deref().into_iter().chain(s.cause.as_deref()).collect(),
        Stmt::Assert(s) => std::iter::once(&*s.test).chain(s.msg.as_deref()).collect(),
        Stmt::Delete(s) => s.targets.iter().collect(),
        Stmt::If(s) => std::iter::once(&*s.test)
            .chain(s.elif_else_clauses.iter().filter_map(|c| c.test.as_ref()))
            .collect(),
        Stmt::While(s) => smallvec![&*s.test],
        Stmt::For(s) => smallvec![&*s.target, &*s.iter],
        Stmt::With(s) => s
            .items
            .iter()
            .flat_map(|i| std::iter::once(&i.context_expr).chain(i.optional_vars.as_deref()))
            .collect(),
        Stmt::Match(s) => smallvec![&*s.subject],
        _ => SmallVec::new(),
    }
}

/// The name of a function's first parameter (`self` of a method).
pub(crate) fn first_parameter(def: &StmtFunctionDef) -> Option<&str> {
    def.parameters.iter_non_variadic_params().next().map(|p| p.parameter.name.id.as_str())
}

/// True for `for` and `while`.
pub(crate) fn is_loop(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::For(_) | Stmt::While(_))
}

/// First and last line of a node.
pub(crate) fn lines_of(module: &Module, node: &impl Ranged) -> (u32, u32) {
    (module.line_of(node.start()), module.line_of(last_offset(node)))
}

/// Offset of a node's last character (its end, for an empty node).
fn last_offset(node: &impl Ranged) -> TextSize {
    let range = node.range();
    if range.end() > range.start() { range.end() - TextSize::from(1) } else { range.end() }
}

/// One step of a [`Path`]: `suite[index]` covers the line; `suite` is block `slot` of `owner`
/// (`None`: the module body).
#[derive(Clone, Copy)]
pub(crate) struct Level<'a> {
    pub owner: Option<&'a Stmt>,
    pub slot: Slot,
    pub suite: &'a [Stmt],
    pub index: usize,
}

impl<'a> Level<'a> {
    pub(crate) fn stmt(&self) -> &'a Stmt {
        &self.suite[self.index]
    }

    /// Same block of the same statement and same position.
    pub(crate) fn same_stmt(&self, other: &Level<'_>) -> bool {
        self.same_suite(other) && self.index == other.index
    }

    pub(crate) fn same_suite(&self, other: &Level<'_>) -> bool {
        std::ptr::eq(self.suite, other.suite)
    }
}

/// The statements that cover a line, outermost first. The last one is the innermost: a simple
/// statement, or a compound one when the line is its header (or a blank line inside it).
pub(crate) struct Path<'a> {
    pub line: u32,
    pub levels: Vec<Level<'a>>,
}

impl<'a> Path<'a> {
    pub(crate) fn leaf(&self) -> &'a Stmt {
        self.levels.last().expect("a path has at least one level").stmt()
    }

    /// Index of the level holding the innermost `def` around the line (decorators excluded).
    pub(crate) fn function_level(&self, module: &Module) -> Option<usize> {
        self.levels.iter().rposition(|level| match level.stmt() {
            Stmt::FunctionDef(def) => self.line >= module.line_of(def.name.start()),
            _ => false,
        })
    }

    pub(crate) fn innermost_function(&self, module: &Module) -> Option<&'a StmtFunctionDef> {
        let level = self.function_level(module)?;
        match self.levels[level].stmt() {
            Stmt::FunctionDef(def) => Some(def),
            _ => None,
        }
    }

    /// Levels inside the innermost function (or the whole path at module level).
    pub(crate) fn scope_levels(&self, module: &Module) -> &[Level<'a>] {
        match self.function_level(module) {
            Some(i) => &self.levels[i + 1..],
            None => &self.levels,
        }
    }
}

/// Builds the [`Path`] to `line`; `None` when no statement covers it.
pub(crate) fn path_to(module: &Module, line: u32) -> Option<Path<'_>> {
    // Compared as offsets: a path is asked for often, and finding each statement's lines
    // took a binary search per probe of the binary search over the statements.
    let span = LineSpan::of(module, line)?;
    let mut levels = Vec::new();
    let (mut owner, mut slot, mut suite) = (None, Slot::Body, module.body());
    while levels.len() < MAX_DEPTH {
        let Some(index) = span.find_in(suite) else { break };
        levels.push(Level { owner, slot, suite, index });
        let stmt = &suite[index];
        if let Stmt::FunctionDef(def) = stmt {
            // A decorator line belongs to the enclosing scope, as in CPython frames.
            if span.is_before(def.name.start()) {
                break;
            }
        }
        let inner = blocks(stmt).into_iter().find(|b| {
            let (Some(first), Some(last)) = (b.suite.first(), b.suite.last()) else { return false };
            !span.is_before(first.start()) && !span.is_after(last)
        });
        let Some(inner) = inner else { break };
        (owner, slot, suite) = (Some(stmt), inner.slot, inner.suite);
    }
    (!levels.is_empty()).then_some(Path { line, levels })
}

/// One line as offsets: where it starts and where the next one does (`None` on the last).
struct LineSpan {
    start: TextSize,
    next: Option<TextSize>,
}

impl LineSpan {
    fn of(module: &Module, line: u32) -> Option<LineSpan> {
        let starts = module.line_starts();
        let start = *starts.get(usize::try_from(line.checked_sub(1)?).ok()?)?;
        let next = usize::try_from(line).ok().and_then(|l| starts.get(l)).copied();
        Some(LineSpan { start, next })
    }

    /// Whether `offset` lies on a later line.
    fn is_before(&self, offset: TextSize) -> bool {
        self.next.is_some_and(|next| offset >= next)
    }

    /// Whether `node` ends on an earlier line (its last character, as [`lines_of`] counts).
    fn is_after(&self, node: &impl Ranged) -> bool {
        last_offset(node) < self.start
    }

    /// Index of the first statement of `suite` whose lines cover the line.
    fn find_in(&self, suite: &[Stmt]) -> Option<usize> {
        let index = suite.partition_point(|s| self.is_after(s));
        let stmt = suite.get(index)?;
        (!self.is_before(stmt.start())).then_some(index)
    }
}

/// A block around a statement visited by [`walk_scope`].
#[derive(Clone, Copy)]
pub(crate) struct Frame<'a> {
    pub owner: &'a Stmt,
    pub slot: Slot,
}

/// Visits every statement of `suite` in source order with its enclosing blocks (outermost
/// first), without entering nested `def`/`class` bodies: they are other scopes, and a `break`
/// or `return` there does not leave this one.
pub(crate) fn walk_scope<'a>(suite: &'a [Stmt], visit: &mut dyn FnMut(&'a Stmt, &[Frame<'a>])) {
    let mut frames = Vec::new();
    walk_suite(suite, &mut frames, visit);
}

fn walk_suite<'a>(
    suite: &'a [Stmt],
    frames: &mut Vec<Frame<'a>>,
    visit: &mut dyn FnMut(&'a Stmt, &[Frame<'a>]),
) {
    for stmt in suite {
        visit(stmt, frames);
        if frames.len() >= MAX_DEPTH || matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
            continue;
        }
        for block in blocks(stmt) {
            frames.push(Frame { owner: stmt, slot: block.slot });
            walk_suite(block.suite, frames, visit);
            frames.pop();
        }
    }
}

/// The statement of `suite` (or of a block nested in it, `def`/`class` bodies included) that
/// starts at `at`: a binary search per level, as statements of a suite are ordered.
pub(crate) fn stmt_starting_at(suite: &[Stmt], at: TextSize) -> Option<&Stmt> {
    let mut suite = suite;
    for _ in 0..=MAX_DEPTH {
        let stmt = suite.get(suite.partition_point(|s| s.end() <= at))?;
        if stmt.start() == at {
            return Some(stmt);
        }
        if stmt.start() > at {
            return None;
        }
        suite =
            blocks(stmt).into_iter().find(|b| b.suite.last().is_some_and(|l| l.end() > at))?.suite;
    }
    None
}

/// The call starting at `at` in the statements of `suite` (nested blocks and scopes included),
/// found by descending to the innermost statement whose header holds it.
pub(crate) fn call_starting_at(suite: &[Stmt], at: TextSize) -> Option<&ExprCall> {
    let mut suite = suite;
    for _ in 0..=MAX_DEPTH {
        let stmt = suite.get(suite.partition_point(|s| s.end() <= at))?;
        if stmt.start() > at {
            return None;
        }
        let inner = blocks(stmt).into_iter().find(|b| {
            b.suite.first().is_some_and(|f| f.start() <= at)
                && b.suite.last().is_some_and(|l| l.end() > at)
        });
        if let Some(block) = inner {
            suite = block.suite;
            continue;
        }
        let mut found = None;
        for e in header_exprs(stmt) {
            crate::syntax::expr::walk(e, &mut |x| {
                if let Expr::Call(c) = x
                    && c.start() == at
                    && found.is_none()
                {
                    found = Some(c);
                }
            });
        }
        return found;
    }
    None
}

/// The statement of the scope `suite` that starts at `at`, with the blocks around it
/// (outermost first) as [`walk_scope`] gives them; `None` inside a nested `def`/`class`.
pub(crate) fn scope_path_to(suite: &[Stmt], at: TextSize) -> Option<(&Stmt, Vec<Frame<'_>>)> {
    let mut suite = suite;
    let mut frames = Vec::new();
    for _ in 0..=MAX_DEPTH {
        let stmt = suite.get(suite.partition_point(|s| s.end() <= at))?;
        if stmt.start() == at {
            return Some((stmt, frames));
        }
        if stmt.start() > at || matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
            return None;
        }
        let block =
            blocks(stmt).into_iter().find(|b| b.suite.last().is_some_and(|l| l.end() > at))?;
        frames.push(Frame { owner: stmt, slot: block.slot });
        suite = block.suite;
    }
    None
}

/// Visits every statement of `suite` in source order, nested `def` and `class` bodies
/// included (to find a definition by its position).
pub(crate) fn walk_all<'a>(suite: &'a [Stmt], visit: &mut dyn FnMut(&'a Stmt)) {
    fn go<'a>(suite: &'a [Stmt], depth: usize, visit: &mut dyn FnMut(&'a Stmt)) {
        for stmt in suite {
            visit(stmt);
            if depth < MAX_DEPTH {
                for block in blocks(stmt) {
                    go(block.suite, depth + 1, visit);
                }
            }
        }
    }
    go(suite, 0, visit);
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
def train(loader):
    for batch in loader:
        if batch is None: continue
        loss = step(batch)

        if rank == 0:
            log(loss)
        else:
            pass
";

    #[test]
    fn path_descends_to_the_innermost_statement() {
        let m = Module::parse(SRC);
        let p = m.path(7).unwrap();
        assert_eq!(p.levels.len(), 4);
        assert!(matches!(p.leaf(), Stmt::Expr(_)));
        assert_eq!(p.levels[3].slot, Slot::Body);
        let p = m.path(9).unwrap();
        assert_eq!(p.levels[3].slot, Slot::Clause(0));
        // One-line `if`: the line is the `continue` inside it.
        assert!(matches!(m.path(3).unwrap().leaf(), Stmt::Continue(_)));
        // Header and blank lines stop at the compound statement around them.
        assert!(matches!(m.path(2).unwrap().leaf(), Stmt::For(_)));
        assert!(matches!(m.path(5).unwrap().leaf(), Stmt::For(_)));
        assert!(m.path(10).is_none());
    }

    #[test]
    fn walk_scope_reports_enclosing_blocks() {
        let m = Module::parse(SRC);
        let Stmt::FunctionDef(def) = &m.body()[0] else { panic!() };
        let mut seen = Vec::new();
        walk_scope(&def.body, &mut |stmt, frames| {
            if matches!(stmt, Stmt::Continue(_) | Stmt::Pass(_)) {
                seen.push((frames.len(), frames.last().unwrap().slot));
            }
        });
        assert_eq!(seen, vec![(2, Slot::Body), (2, Slot::Clause(0))]);
    }
}
