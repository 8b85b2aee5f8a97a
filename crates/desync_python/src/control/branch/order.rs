//! `find_order_branch`: the condition that makes some ranks walk a list of process groups (or
//! of reductions) in another order. Order inversions deadlock with *identical* stacks on every
//! rank — each is inside `allreduce(group)` at the same line, only the loop's iterable differs —
//! so stack comparison cannot find a parting line; the cause is a conditional reordering of the
//! iterable earlier in the function:
//!
//! ```python
//! reductions = [(tp_group, ...), (dp_group, ...)]
//! if step > warmup and (tp_rank + dp_rank) % 2 == 1:   # <- the answer
//!     reductions.reverse()
//! for group, params, average in reductions:
//!     allreduce_(params, group, average)                # <- every rank is here
//! ```
//!
//! Reorderings recognised on the iterable's root name `NAME`: `NAME.reverse()`, `.sort()`,
//! `.insert()`, `.rotate()`, `shuffle(NAME)`, a reassignment (`NAME = NAME[::-1]`,
//! `reversed(NAME)`, another list literal), a swap by tuple assignment, and a conditional
//! expression (`NAME = [a, b] if c else [b, a]`). Only reorderings under an `if` that does not
//! also hold the loop count: an unconditional `reverse()` happens on every rank alike. A call
//! whose process-group argument is one of several names swapped together under a condition
//! (`first, second = second, first`) is recognised the same way, without a loop.

use ruff_python_ast::{Expr, Stmt, StmtIf};
use ruff_text_size::{Ranged, TextRange};

use super::{Candidate, Decider, describe, informative, scope_suite};
use crate::syntax::expr::{self, last_segment, root_name};
use crate::syntax::module::Module;
use crate::syntax::module::call_at;
use crate::syntax::tree::{self, Frame, Slot};
use crate::syntax::types::Branch;
use crate::values::Analysis;

/// Methods that reorder a list in place (`collections.deque.rotate` included).
const REORDERING_METHODS: &[&str] = &["reverse", "sort", "insert", "rotate"];

/// Functions that reorder the list passed first (`random.shuffle(groups)`).
const REORDERING_FUNCTIONS: &[&str] = &["shuffle"];

/// Methods that return a reordered copy (`xs = xs.flip(0)`).
const REORDERED_COPY_METHODS: &[&str] = &["flip", "roll", "permute", "sorted"];

/// Where the statements asked about stand: [`keeps_order`] asks the analysis about calls.
#[derive(Clone, Copy)]
struct Place<'c, 'p> {
    cx: &'c Analysis<'p>,
    module: &'c Module,
}

/// What decides a reordering: one clause of an `if` statement, or a conditional expression.
#[derive(Clone, Copy)]
enum Decision<'a> {
    Clause { stmt: &'a StmtIf, slot: Slot },
    Expression { test: &'a Expr, stmt: &'a Stmt },
}

pub(crate) fn find(cx: &Analysis<'_>, module: &Module, line: u32) -> Option<Branch> {
    let path = module.path(line)?;
    let function = scope_suite(module, &path);
    let call = call_at(module, line);
    let group_names: Vec<&str> =
        call.map(|c| group_arguments(c).filter_map(root_name).collect()).unwrap_or_default();

    // `for` loops whose body holds the line, innermost first; the loop whose target binds the
    // call's process-group argument is the one that decides which group comes first.
    let scope = path.scope_levels(module);
    let mut loops: Vec<&Stmt> = scope
        .windows(2)
        .rev()
        .filter(|w| w[1].slot == Slot::Body && matches!(w[0].stmt(), Stmt::For(_)))
        .map(|w| w[0].stmt())
        .collect();
    loops.sort_by_key(|lp| !binds_any(lp, &group_names));

    let place = Place { cx, module };
    let mut decisions = Vec::new();
    for lp in &loops {
        let Stmt::For(f) = lp else { continue };
        if let Expr::If(e) = iterable(&f.iter) {
            decisions.push(Decision::Expression { test: &e.test, stmt: lp });
        }
        if let Some(name) = iterable_root(&f.iter) {
            let found = reorderings(place, function, name, lp.range());
            decisions.extend(
                found.into_iter().filter(|d| !reset_before(cx, module, scope, d, lp, name)),
            );
        }
    }
    // No loop: names swapped together under a condition (`first, second = second, first`).
    if let Some(leaf) = path.levels.last().map(tree::Level::stmt) {
        for name in &group_names {
            let swaps = reorderings(place, function, name, leaf.range());
            decisions.extend(swaps.into_iter().filter(|d| is_multi_name_binding(place, d, name)));
        }
    }

    let mut first = None;
    for decision in decisions {
        let branch = describe_decision(cx, module, decision);
        if informative(&branch) {
            return Some(branch);
        }
        first.get_or_insert(branch);
    }
    first
}

/// Whether, after the reordering `decision` and before the loop `lp`, a statement every rank
/// runs on its way to the loop makes `name` the same list everywhere again: an assignment
/// (`spec = received[0]` after rank 0 built its own `spec`) or a call that agrees it in place
/// (`dist.broadcast_object_list(spec, src=0)` into the list the receivers rebuilt). What the
/// `if` chose is then overwritten on every rank alike.
fn reset_before(
    cx: &Analysis<'_>,
    module: &Module,
    scope: &[tree::Level<'_>],
    decision: &Decision<'_>,
    lp: &Stmt,
    name: &str,
) -> bool {
    let decided = match decision {
        Decision::Clause { stmt, .. } => stmt.end(),
        Decision::Expression { stmt, .. } => stmt.end(),
    };
    for level in scope {
        let resets = level.suite[..level.index].iter().any(|stmt| {
            stmt.start() >= decided
                && match stmt {
                    Stmt::Assign(a) => a
                        .targets
                        .iter()
                        .any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)),
                    Stmt::AnnAssign(a) => {
                        a.value.is_some()
                            && matches!(&*a.target, Expr::Name(n) if n.id.as_str() == name)
                    }
                    _ => cx.agrees_in_place(module, stmt, name),
                }
        });
        if resets {
            return true;
        }
        if std::ptr::eq(level.stmt(), lp) {
            break;
        }
    }
    false
}

/// Arguments that name a process group: `group=`, `process_group=`, `pg=` keywords, and
/// positional arguments whose root name reads as one (`tp_group`, `pg`, `group`).
fn group_arguments(call: &ruff_python_ast::ExprCall) -> impl Iterator<Item = &Expr> {
    let keywords = call
        .arguments
        .keywords
        .iter()
        .filter(|k| k.arg.as_ref().is_some_and(|a| is_group_name(a.as_str())))
        .map(|k| &k.value);
    let positional = call.arguments.args.iter().filter(|a| root_name(a).is_some_and(is_group_name));
    keywords.chain(positional)
}

fn is_group_name(name: &str) -> bool {
    crate::syntax::patterns::words(name).any(|w| matches!(w.as_str(), "group" | "pg" | "groups"))
}

/// True when the `for` loop's target binds one of `names`.
fn binds_any(lp: &Stmt, names: &[&str]) -> bool {
    let Stmt::For(f) = lp else { return false };
    let mut hit = false;
    expr::walk(&f.target, &mut |e| {
        hit |= matches!(e, Expr::Name(n) if names.contains(&n.id.as_str()));
    });
    hit
}

/// The iterable without order-preserving wrappers (`enumerate(x)`, `list(x)`, `zip(x, y)`).
fn iterable(iter: &Expr) -> &Expr {
    let mut cur = iter;
    for _ in 0..tree::MAX_DEPTH {
        match cur {
            Expr::Call(c)
                if matches!(
                    last_segment(&c.func),
                    Some("enumerate" | "list" | "tuple" | "zip" | "iter")
                ) && matches!(&*c.func, Expr::Name(_)) =>
            {
                let Some(first) = c.arguments.args.first() else { return cur };
                cur = first;
            }
            _ => return cur,
        }
    }
    cur
}

fn iterable_root(iter: &Expr) -> Option<&str> {
    match iterable(iter) {
        Expr::Name(n) => Some(n.id.as_str()),
        e @ (Expr::Attribute(_) | Expr::Subscript(_)) => root_name(e),
        Expr::Call(c) if matches!(&*c.func, Expr::Attribute(_)) => root_name(&c.func),
        _ => None,
    }
}

/// Conditional reorderings of `name` in the function `suite` that can change the order seen
/// at `target` (a loop, or the statement of the call): before it, or in a loop around both.
fn reorderings<'a>(
    place: Place<'_, '_>,
    suite: &'a [Stmt],
    name: &str,
    target: TextRange,
) -> Vec<Decision<'a>> {
    let mut out = Vec::new();
    tree::walk_scope(suite, &mut |stmt, frames| {
        if target.contains_range(stmt.range()) || !reorders(place, stmt, name) {
            return;
        }
        let shares_loop =
            frames.iter().any(|f| tree::is_loop(f.owner) && f.owner.range().contains_range(target));
        if stmt.start() >= target.start() && !shares_loop {
            return;
        }
        if let Some(Expr::If(e)) = assigned_value(stmt) {
            out.push(Decision::Expression { test: &e.test, stmt });
        } else if let Some(decision) = deciding_clause(frames, target) {
            out.push(decision);
        }
    });
    out
}

/// The innermost `if` clause around a statement, unless that `if` also holds `target` (then
/// every rank that reaches the target took the same clause).
fn deciding_clause<'a>(frames: &[Frame<'a>], target: TextRange) -> Option<Decision<'a>> {
    let frame = frames.iter().rev().find(|f| matches!(f.owner, Stmt::If(_)))?;
    let Stmt::If(stmt) = frame.owner else { return None };
    (!stmt.range().contains_range(target)).then_some(Decision::Clause { stmt, slot: frame.slot })
}

/// True when `stmt` changes the order (or the contents) of the list bound to `name`.
fn reorders(place: Place<'_, '_>, stmt: &Stmt, name: &str) -> bool {
    match stmt {
        Stmt::Expr(s) => {
            let Expr::Call(c) = &*s.value else { return false };
            match &*c.func {
                Expr::Attribute(a) if REORDERING_METHODS.contains(&a.attr.id.as_str()) => {
                    root_name(&a.value) == Some(name)
                }
                f => {
                    last_segment(f).is_some_and(|s| REORDERING_FUNCTIONS.contains(&s))
                        && c.arguments.args.first().and_then(root_name) == Some(name)
                }
            }
        }
        Stmt::Assign(s) => {
            s.targets.iter().any(|t| binds_name(t, name)) && !keeps_order(place, &s.value, name)
        }
        Stmt::AnnAssign(s) => {
            s.value.as_deref().is_some_and(|v| !keeps_order(place, v, name))
                && binds_name(&s.target, name)
        }
        _ => false,
    }
}

/// A new value for `name` that keeps the order of what it holds: one item wrapped
/// ([`wraps`]), a method of `name` itself that moves or converts the object without a
/// reordering (`model = model.to(device)`, `model = model.to_empty(device=d)`, `xs = xs.copy()`),
/// or a progress bar around `name` (`xs = tqdm(xs, desc=...)` on the first rank only: it
/// yields the same items in the same order).
fn keeps_order(place: Place<'_, '_>, value: &Expr, name: &str) -> bool {
    if wraps(value, name) || place.cx.yields_items_of(place.module, value, name) {
        return true;
    }
    let Expr::Call(c) = value else { return false };
    let Expr::Attribute(a) = &*c.func else { return false };
    matches!(&*a.value, Expr::Name(n) if n.id.as_str() == name)
        && !REORDERING_METHODS.contains(&a.attr.id.as_str())
        && !REORDERED_COPY_METHODS.contains(&a.attr.id.as_str())
}

/// `[name]` or `(name,)`: one item wrapped into a one-element list (input normalisation,
/// `if not isinstance(xs, list): xs = [xs]`); a single element has no order to change.
fn wraps(value: &Expr, name: &str) -> bool {
    let elts = match value {
        Expr::List(l) => &l.elts,
        Expr::Tuple(t) => &t.elts,
        _ => return false,
    };
    matches!(&elts[..], [Expr::Name(n)] if n.id.as_str() == name)
}

/// `name = ...`, or `name`/`name[i]` among the elements of a tuple target (a swap).
fn binds_name(target: &Expr, name: &str) -> bool {
    match target {
        Expr::Name(n) => n.id.as_str() == name,
        Expr::Tuple(t) => t.elts.iter().any(|e| match e {
            Expr::Subscript(s) => root_name(&s.value) == Some(name),
            e => binds_name(e, name),
        }),
        Expr::List(l) => l.elts.iter().any(|e| binds_name(e, name)),
        _ => false,
    }
}

/// For the no-loop case: only tuple assignments that bind `name` with other names move an
/// order; `group = tp_group` under `if rank in ranks:` is how every rank picks its own group.
fn is_multi_name_binding(place: Place<'_, '_>, decision: &Decision<'_>, name: &str) -> bool {
    let stmt = match decision {
        Decision::Expression { stmt, .. } => *stmt,
        Decision::Clause { stmt, slot } => {
            let suite = match slot {
                Slot::Clause(i) => stmt.elif_else_clauses.get(*i).map(|c| &c.body[..]),
                _ => Some(&stmt.body[..]),
            };
            let Some(found) = suite.and_then(|s| s.iter().find(|s| reorders(place, s, name)))
            else {
                return false;
            };
            found
        }
    };
    match stmt {
        Stmt::Assign(s) => {
            s.targets.iter().any(|t| matches!(t, Expr::Tuple(x) if x.elts.len() > 1))
        }
        _ => false,
    }
}

fn assigned_value(stmt: &Stmt) -> Option<&Expr> {
    match stmt {
        Stmt::Assign(s) => Some(&s.value),
        Stmt::AnnAssign(s) => s.value.as_deref(),
        _ => None,
    }
}

fn describe_decision(cx: &Analysis<'_>, module: &Module, decision: Decision<'_>) -> Branch {
    match decision {
        Decision::Clause { stmt, slot } => {
            let clause = match slot {
                Slot::Clause(i)
                    if stmt.elif_else_clauses.get(i).is_some_and(|c| c.test.is_some()) =>
                {
                    Some(i)
                }
                _ => None,
            };
            let candidate = Candidate {
                decider: Decider::If { stmt, clause },
                skipped_line: None,
                indirect: false,
            };
            describe::branch(cx, module, &candidate)
        }
        Decision::Expression { test, stmt } => {
            describe::conditional_expression(cx, module, stmt, test)
        }
    }
}
