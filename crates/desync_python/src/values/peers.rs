//! Paths only a run without peers takes. A distributed run has more than one rank, so
//! `if world_size == 1`, `if not dist.is_initialized()` and `if RANK == -1` (a launcher's rank
//! variable left at its default) hold in a single-process run only, and the same way on every
//! rank of one job. What is assigned on such a path never happens where there are peers, and
//! such a test is no rank's own decision.

use ruff_python_ast::{BoolOp, CmpOp, Expr, Stmt, UnaryOp};
use ruff_text_size::{Ranged, TextSize};

use super::summary::{distributed_predicate, one_member};
use super::value::Eval;
use crate::names::bindings::{self, Source};
use crate::syntax::module::Module;
use crate::syntax::tree::Slot;
use crate::syntax::types::DependenceKind;

thread_local! {
    /// Whether a module constant is being read in the module it comes from ([`Eval::is_rank`]).
    static IMPORTED_DEPTH: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    /// Tests being classified one inside another (a rank read on the way compares again).
    static ATOM_DEPTH: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

impl Eval<'_, '_> {
    /// Whether `test` evaluating to `holds` implies a run without peers: `not a` flips, `a and
    /// b` holding needs one part that implies it, failing needs every part (and `or` the other
    /// way round).
    pub(crate) fn implies_single_process(&mut self, test: &Expr, holds: bool) -> bool {
        match test {
            Expr::UnaryOp(u) if u.op == UnaryOp::Not => {
                self.implies_single_process(&u.operand, !holds)
            }
            Expr::BoolOp(b) => {
                let one_is_enough = (b.op == BoolOp::And) == holds;
                let mut parts = b.values.iter();
                if one_is_enough {
                    parts.any(|v| self.implies_single_process(v, holds))
                } else {
                    parts.all(|v| self.implies_single_process(v, holds))
                }
            }
            _ => self.single_process_atom(test) == Some(holds),
        }
    }

    /// `Some(true)` for a test that holds in a single-process run only (`size == 1`, `rank ==
    /// -1`, `rank < 0`), `Some(false)` for one whose failing means a single process
    /// (`is_initialized()`, `size > 1`, `rank != -1`); `None` for any other.
    pub(crate) fn single_process_atom(&mut self, test: &Expr) -> Option<bool> {
        if ATOM_DEPTH.get() >= 2 {
            return None;
        }
        ATOM_DEPTH.set(ATOM_DEPTH.get() + 1);
        let out = self.single_process_atom_here(test);
        ATOM_DEPTH.set(ATOM_DEPTH.get() - 1);
        out
    }

    fn single_process_atom_here(&mut self, test: &Expr) -> Option<bool> {
        match test {
            Expr::Call(c) => distributed_predicate(self, c, 0).then_some(false),
            Expr::Compare(c) => {
                if one_member(self, test) {
                    return Some(true);
                }
                let ([op], [right]) = (&*c.ops, &*c.comparators) else { return None };
                // `size > 1`, `size >= 2`, `size != 1`: only a group with peers.
                let size = crate::syntax::expr::int_literal;
                if matches!(
                    (op, size(right)),
                    (CmpOp::Gt | CmpOp::NotEq, Some(1)) | (CmpOp::GtE, Some(2))
                ) && self.counts_group_members(&c.left, test.start(), 0)
                {
                    return Some(false);
                }
                let single = match (op, negative_literal(right)) {
                    (CmpOp::Eq | CmpOp::LtE, Some(1)) => true,
                    (CmpOp::NotEq | CmpOp::Gt, Some(1)) => false,
                    (CmpOp::Lt, _) if size(right) == Some(0) => true,
                    (CmpOp::GtE, _) if size(right) == Some(0) => false,
                    _ => return None,
                };
                self.is_rank(&c.left, test.start()).then_some(single)
            }
            _ => None,
        }
    }

    /// Whether `e` is a rank id (its value comes from one), also a module constant imported
    /// from the project (`from .utils import RANK`), read where it is assigned.
    fn is_rank(&mut self, e: &Expr, at: TextSize) -> bool {
        let rank = |d: &super::Deps| d.reasons.iter().any(|r| r.kind == DependenceKind::RankId);
        if rank(&self.value(e, at).whole) {
            return true;
        }
        let Expr::Name(n) = e else { return false };
        let Some(binding) = bindings::lookup(self.module, self.scope, n.id.as_str(), at) else {
            return false;
        };
        let Source::Import { module, name: Some(imported), level } = binding.source else {
            return false;
        };
        let Some(m) = self.cx.project().and_then(|p| p.import(self.module, module, level)) else {
            return false;
        };
        let m = self.cx.keep(m);
        let assigned = m.body().iter().rev().find_map(|stmt| match stmt {
            Stmt::Assign(a)
                if matches!(&a.targets[..], [Expr::Name(t)] if t.id.as_str() == imported) =>
            {
                Some((&*a.value, stmt.start()))
            }
            _ => None,
        });
        let Some((value, start)) = assigned else { return false };
        // One module away only: a constant read where it is assigned.
        if IMPORTED_DEPTH.get() > 0 {
            return false;
        }
        IMPORTED_DEPTH.set(1);
        let d = self.cx.dependence_of(&m, value, start);
        IMPORTED_DEPTH.set(0);
        rank(&d)
    }

    /// Whether the `i`-th `elif`/`else` of `s` is taken in a single-process run only: the
    /// tests before it failing, or its own holding, implies no peers.
    pub(crate) fn clause_single_process(&mut self, s: &ruff_python_ast::StmtIf, i: usize) -> bool {
        if self.implies_single_process(&s.test, false) {
            return true;
        }
        let clauses = &s.elif_else_clauses[..=i];
        let (own, before) = clauses.split_last().expect("clause i exists");
        before
            .iter()
            .any(|c| c.test.as_ref().is_some_and(|t| self.implies_single_process(t, false)))
            || own.test.as_ref().is_some_and(|t| self.implies_single_process(t, true))
    }

    /// Whether `stmt` runs in a single-process run only: it sits in the block of an `if` whose
    /// taking it implies no peers (`if RANK == -1:`, the `else` of `if dist.is_initialized():`),
    /// or after an `if` in the same block that leaves it (raise, return, continue, break) on
    /// every distributed run (`if epoch > 0 or RANK != -1: raise`).
    pub(crate) fn single_process_only(&mut self, module: &Module, stmt: &Stmt) -> bool {
        let Some(path) = module.path(module.line_of(stmt.start())) else { return false };
        for level in path.scope_levels(module).to_vec() {
            if let Some(Stmt::If(s)) = level.owner {
                let taken = match level.slot {
                    Slot::Body => self.implies_single_process(&s.test, true),
                    // An `elif`/`else` is reached when the first test failed.
                    Slot::Clause(i) => self.clause_single_process(s, i),
                    _ => false,
                };
                if taken {
                    return true;
                }
            }
            for before in &level.suite[..level.index] {
                let Stmt::If(s) = before else { continue };
                if s.elif_else_clauses.is_empty()
                    && leaves(&s.body)
                    && self.implies_single_process(&s.test, false)
                {
                    return true;
                }
            }
        }
        false
    }
}

/// `n` for a literal `-n`.
fn negative_literal(e: &Expr) -> Option<u64> {
    match e {
        Expr::UnaryOp(u) if u.op == UnaryOp::USub => crate::syntax::expr::int_literal(&u.operand),
        _ => None,
    }
}

/// Whether a block always leaves the rest of its enclosing block (its last statement jumps).
pub(crate) fn leaves(body: &[Stmt]) -> bool {
    matches!(
        body.last(),
        Some(Stmt::Raise(_) | Stmt::Return(_) | Stmt::Continue(_) | Stmt::Break(_))
    )
}
