//! An attribute as it stands where it is read. `self.stop` is otherwise read as every value the
//! class ever assigns to it; but `self.stop = box[0]` right after a broadcast, just before `if
//! self.stop: break`, is the only value that test can see. Within one method, walking back from
//! the read through the blocks around it, the last statement that assigns the attribute on every
//! path with peers (a path only a single-process run takes is left out) gives its value, as long
//! as nothing between can assign it again: a method of the same object, or a call given the
//! object, may (`self.run_callbacks(...)`), and so may a later pass of a loop around the read.

use ruff_python_ast::{Expr, Stmt, StmtIf};
use ruff_text_size::{Ranged, TextSize};

use super::peers::leaves;
use super::value::Eval;
use super::via;
use super::{Deps, MAX_HOPS};
use crate::syntax::module::Module;
use crate::syntax::tree::{self, Slot};

/// How many attribute walks may be under way at once (one inside another's tests).
const MAX_STANDING_DEPTH: u8 = 3;

thread_local! {
    static STANDING_DEPTH: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// What one earlier statement says about the attribute.
enum Seen {
    /// It assigns the attribute on every path with peers: the value it leaves.
    Assigns(Box<Deps>),
    /// It may change the attribute some other way: the read sees more than one value.
    Unknown,
    /// It leaves the attribute alone.
    Untouched,
}

impl<'m> Eval<'_, 'm> {
    /// What `<own>.<attr>` depends on where it is read at `at`, when an earlier statement of the
    /// same method decides it ([`Seen::Assigns`]); `None` to read it as the class assigns it.
    pub(crate) fn attribute_as_it_stands(
        &mut self,
        own: &str,
        attr: &str,
        at: TextSize,
    ) -> Option<Deps> {
        // Bounded like the other follows: a test read on the way may read another attribute.
        if STANDING_DEPTH.get() >= MAX_STANDING_DEPTH {
            return None;
        }
        STANDING_DEPTH.set(STANDING_DEPTH.get() + 1);
        let out = self.attribute_walk(own, attr, at);
        STANDING_DEPTH.set(STANDING_DEPTH.get() - 1);
        out
    }

    fn attribute_walk(&mut self, own: &str, attr: &str, at: TextSize) -> Option<Deps> {
        let module: &'m Module = self.module;
        let function = self.scope.function?;
        let path = module.path(module.line_of(at))?;
        if !path.innermost_function(module).is_some_and(|f| std::ptr::eq(f, function)) {
            return None;
        }
        for level in path.scope_levels(module).to_vec().iter().rev() {
            for before in level.suite[..level.index].iter().rev() {
                match self.seen(module, before, own, attr) {
                    Seen::Assigns(d) => return Some(*d),
                    Seen::Unknown => return None,
                    Seen::Untouched => {}
                }
            }
            // Into the block around: its header ran before (a `with self.timer():` may
            // assign), and a loop's later passes run all of its body before this read again.
            let owner = level.owner?;
            let whole = match owner {
                Stmt::For(_) | Stmt::While(_) => true,
                Stmt::Try(_) => level.slot != Slot::Body,
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return None,
                _ => false,
            };
            let changed = if whole {
                touches(owner, own, attr)
            } else {
                tree::header_exprs(owner).into_iter().any(|e| expr_touches(e, own))
            };
            if changed {
                return None;
            }
        }
        None
    }

    fn seen(&mut self, module: &Module, stmt: &'m Stmt, own: &str, attr: &str) -> Seen {
        let value = match stmt {
            Stmt::Assign(a) if a.targets.iter().any(|t| is_attr(t, own, attr)) => Some(&*a.value),
            Stmt::AnnAssign(a) if is_attr(&a.target, own, attr) => a.value.as_deref(),
            Stmt::If(s) => return self.seen_in_if(module, stmt, s, own, attr),
            _ => None,
        };
        if let Some(value) = value {
            let hop = format!(
                "`{own}.{attr}` = {} (line {})",
                crate::syntax::expr::snippet(module.text(value.range())),
                module.line_of(stmt.start())
            );
            // `a, self.x = ...` or `self.x = y = ...`: only a plain assignment is followed.
            if matches!(stmt, Stmt::Assign(a) if a.targets.len() != 1) {
                return Seen::Unknown;
            }
            // `self.a = self.b` and `self.b = self.a`: each assignment followed once.
            let at = stmt.start();
            if self.tracing.contains(&at) || self.tracing.len() >= MAX_HOPS {
                return Seen::Unknown;
            }
            self.tracing.push(at);
            let d = self.assigned(value, at).whole.hop(&hop);
            self.tracing.pop();
            return Seen::Assigns(Box::new(d));
        }
        if touches(stmt, own, attr) { Seen::Unknown } else { Seen::Untouched }
    }

    /// An `if` every one of whose blocks with peers ends by assigning the attribute (`if RANK
    /// != -1: ...; self.stop = box[0]`, whose missing `else` only a single process takes).
    fn seen_in_if(
        &mut self,
        module: &Module,
        stmt: &Stmt,
        s: &'m StmtIf,
        own: &str,
        attr: &str,
    ) -> Seen {
        if !touches(stmt, own, attr) {
            return Seen::Untouched;
        }
        let mut blocks: Vec<&'m [Stmt]> = Vec::new();
        if !self.implies_single_process(&s.test, true) {
            blocks.push(&s.body);
        }
        for (i, clause) in s.elif_else_clauses.iter().enumerate() {
            if !self.clause_single_process(s, i) {
                blocks.push(&clause.body);
            }
        }
        // No `else`: falling through is a path too, unless only a single process takes it.
        let falls_through = s.elif_else_clauses.last().is_none_or(|c| c.test.is_some());
        if falls_through {
            let all_fail = self.implies_single_process(&s.test, false)
                || s.elif_else_clauses.iter().any(|c| {
                    c.test.as_ref().is_some_and(|t| self.implies_single_process(t, false))
                });
            if !all_fail {
                return Seen::Unknown;
            }
        }
        let mut out = Deps::default();
        for block in &blocks {
            let Some(last) = block.last() else { return Seen::Unknown };
            if leaves(block) {
                continue;
            }
            match self.seen(module, last, own, attr) {
                Seen::Assigns(d) => out.merge(*d),
                Seen::Unknown | Seen::Untouched => return Seen::Unknown,
            }
        }
        if blocks.len() > 1 {
            out.merge(self.value(&s.test, s.start()).whole.through(via::CHOICE));
        }
        Seen::Assigns(Box::new(out))
    }
}

/// `<own>.<attr>` as written.
fn is_attr(e: &Expr, own: &str, attr: &str) -> bool {
    matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == attr
        && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == own))
}

/// Whether `stmt` (and what it holds) may change `<own>.<attr>`: it assigns or deletes it, or
/// calls a method of the object or a function given the object.
fn touches(stmt: &Stmt, own: &str, attr: &str) -> bool {
    let mut found = false;
    tree::walk_scope(std::slice::from_ref(stmt), &mut |s, _| {
        if found {
            return;
        }
        let targets: Vec<&Expr> = match s {
            Stmt::Assign(a) => a.targets.iter().collect(),
            Stmt::AnnAssign(a) => vec![&*a.target],
            Stmt::AugAssign(a) => vec![&*a.target],
            Stmt::Delete(d) => d.targets.iter().collect(),
            Stmt::For(f) => vec![&*f.target],
            _ => Vec::new(),
        };
        let mut all: Vec<&Expr> = Vec::new();
        for t in targets {
            crate::syntax::expr::walk(t, &mut |x| all.push(x));
        }
        found = all.iter().any(|t| is_attr(t, own, attr))
            || tree::header_exprs(s).into_iter().any(|e| expr_touches(e, own));
    });
    found
}

/// Whether `e` calls a method of `own` (`self.step()`) or passes `own` to a call
/// (`callback(self)`, `setattr(self, ...)`).
fn expr_touches(e: &Expr, own: &str) -> bool {
    let is_own = |x: &Expr| matches!(x, Expr::Name(n) if n.id.as_str() == own);
    let mut found = false;
    crate::syntax::expr::walk(e, &mut |x| {
        if let Expr::Call(c) = x {
            let method = matches!(&*c.func, Expr::Attribute(a) if is_own(&a.value));
            let given = c.arguments.args.iter().any(is_own)
                || c.arguments.keywords.iter().any(|k| is_own(&k.value));
            found |= method || given;
        }
    });
    found
}
