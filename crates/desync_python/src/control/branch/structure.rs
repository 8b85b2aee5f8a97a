//! Structural candidates: where the statement chains of two lines part, and the compound
//! statements around a single line.

use ruff_python_ast::{Expr, Stmt};

use super::{Candidate, Decider};
use crate::syntax::expr::last_segment;
use crate::syntax::module::Module;
use crate::syntax::tree::{Level, Path, Slot, is_loop};

/// Candidates from comparing two paths, split so that loops can rank after jumps (a `break`
/// inside a loop explains more than the loop header does).
#[derive(Default)]
pub(super) struct Split<'a> {
    pub decisive: Vec<Candidate<'a>>,
    /// `with` statements around both lines whose manager a condition chooses, innermost
    /// first: they explain less than a statement that holds one line only, more than a loop.
    pub contexts: Vec<Candidate<'a>>,
    pub loops: Vec<Candidate<'a>>,
}

impl<'a> Split<'a> {
    fn push(&mut self, c: Candidate<'a>) {
        match c.decider {
            Decider::Loop(_) => self.loops.push(c),
            _ => self.decisive.push(c),
        }
    }
}

pub(super) fn split<'a>(module: &Module, a: &Path<'a>, b: &Path<'a>) -> Split<'a> {
    let mut out = Split::default();
    let common = a.levels.iter().zip(&b.levels).take_while(|(x, y)| x.same_stmt(y)).count();
    let (la, lb) = (a.levels.len(), b.levels.len());
    if common == la && common == lb {
        return out;
    }
    out.contexts = chosen_contexts(module, &a.levels[..common], a);
    if common == la || common == lb {
        // One line is the header of a compound statement that holds the other line.
        let deeper = if common == la { b } else { a };
        for c in inside(module, deeper, common - 1) {
            out.push(c);
        }
        return out;
    }
    let (x, y) = (&a.levels[common], &b.levels[common]);
    if !x.same_suite(y) {
        // Different blocks of one statement: it alone decides.
        if let Some(owner) = x.owner
            && let Some(c) = between_blocks(owner, x.slot, y.slot)
        {
            out.push(c);
        }
        return out;
    }
    // Siblings in one block: the compound statements holding one line but not the other.
    let (first, second) = if x.index < y.index { (a, b) } else { (b, a) };
    for c in inside(module, first, common).into_iter().chain(inside(module, second, common)) {
        out.push(c);
    }
    out
}

/// Candidates from the compound statements of `path` at `from` and below that hold its line in
/// one of their blocks, innermost first. A line on a loop's header (a collective issued while
/// fetching the next batch) is decided by that loop first.
fn inside<'a>(module: &Module, path: &Path<'a>, from: usize) -> Vec<Candidate<'a>> {
    let levels = path.scope_levels(module);
    let offset = path.levels.len() - levels.len();
    let mut out = Vec::new();
    if let Some(leaf) = levels.last().filter(|l| is_loop(l.stmt()) && path.levels.len() > from) {
        out.push(Candidate {
            decider: Decider::Loop(leaf.stmt()),
            skipped_line: Some(path.line),
            indirect: false,
        });
    }
    for pair in path.levels.windows(2).skip(from.max(offset)).rev() {
        let (outer, inner): (&Level<'a>, &Level<'a>) = (&pair[0], &pair[1]);
        if let Some(decider) = decider_for(outer.stmt(), inner.slot) {
            out.push(Candidate { decider, skipped_line: Some(path.line), indirect: false });
        }
    }
    out
}

/// The `with` statements among `shared` (levels both lines are inside of, outermost first)
/// whose body holds the lines and whose manager is chosen by a conditional expression,
/// innermost first, within the lines' function.
fn chosen_contexts<'a>(
    module: &Module,
    shared: &[Level<'a>],
    path: &Path<'a>,
) -> Vec<Candidate<'a>> {
    let from = path.function_level(module).map_or(0, |f| f + 1);
    let mut out = Vec::new();
    for (depth, level) in shared.iter().enumerate().skip(from).rev() {
        let Stmt::With(with) = level.stmt() else { continue };
        // The lines are in the body, not on the header (`with a if c else b:` itself).
        if path.levels.get(depth + 1).is_none_or(|inner| inner.slot != Slot::Body) {
            continue;
        }
        for item in &with.items {
            if let Expr::If(chosen) = &item.context_expr {
                out.push(Candidate {
                    decider: Decider::ChosenContext { stmt: with, test: &chosen.test },
                    skipped_line: None,
                    indirect: false,
                });
                break;
            }
        }
    }
    out
}

/// The compound statements around `path`'s line within its function, innermost first.
pub(super) fn enclosing<'a>(module: &Module, path: &Path<'a>) -> Vec<Candidate<'a>> {
    let offset = path.levels.len() - path.scope_levels(module).len();
    inside(module, path, offset)
}

/// What decides whether a rank runs block `slot` of `stmt`.
fn decider_for(stmt: &Stmt, slot: Slot) -> Option<Decider<'_>> {
    match (stmt, slot) {
        (Stmt::If(s), Slot::Body) => Some(Decider::If { stmt: s, clause: None }),
        (Stmt::If(s), Slot::Clause(i)) => {
            let elif = s.elif_else_clauses.get(i).is_some_and(|c| c.test.is_some());
            Some(Decider::If { stmt: s, clause: elif.then_some(i) })
        }
        (Stmt::For(_) | Stmt::While(_), Slot::Body | Slot::OrElse) => Some(Decider::Loop(stmt)),
        (Stmt::Try(s), Slot::Body | Slot::OrElse) if !s.handlers.is_empty() => {
            Some(Decider::Except { stmt: s, handler: 0 })
        }
        (Stmt::Try(s), Slot::Handler(i)) => Some(Decider::Except { stmt: s, handler: i }),
        (Stmt::With(s), Slot::Body) if s.items.iter().any(|i| suppresses(&i.context_expr)) => {
            Some(Decider::With(s))
        }
        _ => None,
    }
}

/// What decides between two different blocks of `owner`.
fn between_blocks(owner: &Stmt, a: Slot, b: Slot) -> Option<Candidate<'_>> {
    let decider = match owner {
        // The earlier clause's test is the first one that tells the groups apart.
        Stmt::If(_) => decider_for(owner, earlier(a, b))?,
        Stmt::Try(_) => match (a, b) {
            (Slot::Handler(i), Slot::Handler(j)) => decider_for(owner, Slot::Handler(i.min(j)))?,
            (Slot::Handler(i), _) | (_, Slot::Handler(i)) => decider_for(owner, Slot::Handler(i))?,
            _ => decider_for(owner, Slot::Body)?,
        },
        _ if is_loop(owner) => Decider::Loop(owner),
        _ => return None,
    };
    Some(Candidate { decider, skipped_line: None, indirect: false })
}

fn earlier(a: Slot, b: Slot) -> Slot {
    match (a, b) {
        (Slot::Clause(i), Slot::Clause(j)) => Slot::Clause(i.min(j)),
        _ => Slot::Body,
    }
}

/// `with contextlib.suppress(...)`: exceptions end the block early on the ranks that raised.
fn suppresses(context: &Expr) -> bool {
    matches!(context, Expr::Call(c) if last_segment(&c.func) == Some("suppress"))
}
