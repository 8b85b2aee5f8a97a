//! Decisions: why an `if`/`while` test can differ across ranks. The same as any value, except
//! for comparisons of the rank with a value no rank has (`local_rank != -1`, `rank >= 0`):
//! launchers number ranks from 0, so these only say whether the job runs distributed at all,
//! and that is the same on every rank (torchrun sets `RANK`/`LOCAL_RANK` on every process, the
//! legacy launcher passes `--local_rank=-1` to none; research §2).

use ruff_python_ast::{BoolOp, CmpOp, Expr, ExprCompare, Number, Stmt, UnaryOp};
use ruff_text_size::TextSize;

use super::value::Eval;
use super::{Analysis, Deps, Finding, via};
use crate::syntax::module::Module;
use crate::syntax::types::DependenceKind;

impl Analysis<'_> {
    /// Why the test `expr_source`, written at `line` of `module`, can decide differently on
    /// different ranks (see [`Analysis::dependence`]; comparisons of the rank with a value no
    /// rank has are the same on every rank).
    pub fn condition(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        let deps = self.parsed(module, line, expr_source, decision);
        Finding::from_deps(&deps)
    }
}

/// What the test `expr` decides on (the sentinel rule applied); also what decides whether a
/// statement under an `if`/`while` runs ([`Eval::control`]).
pub(crate) fn decision(e: &mut Eval<'_, '_>, expr: &Expr, at: TextSize) -> Deps {
    test(e, expr, at, 0)
}

fn test(e: &mut Eval<'_, '_>, expr: &Expr, at: TextSize, depth: usize) -> Deps {
    if depth > 32 {
        return e.value(expr, at).whole;
    }
    match expr {
        Expr::BoolOp(b) if matches!(b.op, BoolOp::And | BoolOp::Or) => {
            let mut out = Deps::default();
            for v in &b.values {
                out.merge(test(e, v, at, depth + 1));
            }
            out
        }
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => test(e, &u.operand, at, depth + 1),
        Expr::Compare(c) if is_sentinel(c) => sentinel(e, c, at),
        // `if not state[fqn]:`: whether a container is empty.
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => {
            container_test(e.value(expr, at).whole)
        }
        // `for key in state: if key not in state`: always the same answer.
        Expr::Compare(c) if is_own_key_test(e.module, c, at) => Deps::default(),
        _ => structure_test(e, expr, at).unwrap_or_else(|| match expr {
            // `fqn not in state`: the key, and whether the container holds such keys.
            Expr::Compare(c)
                if matches!((&*c.ops, &*c.comparators), ([CmpOp::In | CmpOp::NotIn], [_])) =>
            {
                let mut deps = e.value(&c.left, at).whole;
                deps.merge(container_test(e.value(&c.comparators[0], at).whole));
                deps
            }
            _ => e.value(expr, at).whole,
        }),
    }
}

/// A comparison of the rank with a value no rank has: what the other side depends on, less
/// the rank itself.
fn sentinel(e: &mut Eval<'_, '_>, c: &ExprCompare, at: TextSize) -> Deps {
    let side = if is_no_rank(&c.left) { &c.comparators[0] } else { &c.left };
    let mut deps = e.value(side, at).whole;
    let only_rank =
        !deps.reasons.is_empty() && deps.reasons.iter().all(|r| r.kind == DependenceKind::RankId);
    if only_rank {
        deps.reasons.clear();
    }
    deps
}

/// What a test kept as a value decides on, when it compares the rank with a value no rank
/// has (`return rank >= 0 and local_rank >= 0`, `is_dist = local_rank != -1`): whether the job
/// is distributed, the same on every rank, as in an `if`. `None` for any other expression.
pub(crate) fn sentinel_test(e: &mut Eval<'_, '_>, expr: &Expr, at: TextSize) -> Option<Deps> {
    match expr {
        Expr::Compare(c) if is_sentinel(c) => Some(sentinel(e, c, at)),
        _ => None,
    }
}

/// `key in d` / `key not in d` inside a loop over `d`'s own keys (`for key in d`, `for key,
/// value in d.items()`, `for key in d.keys()`) that neither rebinds `key` nor changes `d`
/// (`d = ...`, `d[k] = v`, `del d[k]`): the key came from `d`, so the test always holds (or
/// always fails) and decides nothing, whatever `d` holds on each rank.
fn is_own_key_test(module: &Module, c: &ExprCompare, at: TextSize) -> bool {
    let ([CmpOp::In | CmpOp::NotIn], [container]) = (&*c.ops, &*c.comparators) else {
        return false;
    };
    let (Expr::Name(key), Some(container)) = (&*c.left, crate::syntax::expr::dotted(container))
    else {
        return false;
    };
    let key = key.id.as_str();
    let Some(path) = crate::syntax::tree::path_to(module, module.line_of(at)) else { return false };
    let levels = path.scope_levels(module);
    // The loops around the test (the last level is the test's own statement).
    let loops = levels[..levels.len().saturating_sub(1)].iter().filter_map(|l| match l.stmt() {
        Stmt::For(f) => Some(f),
        _ => None,
    });
    loops.into_iter().rev().any(|f| {
        takes_keys_of(&f.iter, &f.target, key, &container) && {
            let bound = crate::names::bindings::bound_paths(&f.body);
            !bound.contains(key) && !bound.contains(&container)
        }
    })
}

/// Whether `for target in iter` gives `key` the keys of `container`: `container`,
/// `container.keys()` or `sorted(container)` and the like, with `key` as the target, or
/// `container.items()` with `key` first.
fn takes_keys_of(iter: &Expr, target: &Expr, key: &str, container: &str) -> bool {
    let is_key = |t: &Expr| matches!(t, Expr::Name(n) if n.id.as_str() == key);
    let method_of = |e: &Expr, method: &str| match e {
        Expr::Call(call) if call.arguments.is_empty() => match &*call.func {
            Expr::Attribute(a) if a.attr.id.as_str() == method => {
                crate::syntax::expr::dotted(&a.value).is_some_and(|d| d == container)
            }
            _ => false,
        },
        _ => false,
    };
    let keys = |e: &Expr| {
        crate::syntax::expr::dotted(e).is_some_and(|d| d == container) || method_of(e, "keys")
    };
    let keys_in_order = match iter {
        Expr::Call(call)
            if matches!(&*call.func, Expr::Name(n)
                if matches!(n.id.as_str(), "sorted" | "list" | "tuple" | "reversed"))
                && call.arguments.keywords.is_empty() =>
        {
            matches!(&*call.arguments.args, [only] if keys(only))
        }
        _ => keys(iter),
    };
    if keys_in_order {
        return is_key(target);
    }
    method_of(iter, "items")
        && matches!(target, Expr::Tuple(t) if t.elts.len() == 2 && is_key(&t.elts[0]))
}

/// What decides a test of a container's shape (whether it is empty, whether it holds a key):
/// `deps` without the leaves of copies that keep the containers ([`via::LEAVES`]), which agree
/// in keys, lengths and emptiness. (A leaf tested for truth is taken as a container too: leaves
/// are tensors and numbers, seldom tested that way.)
fn container_test(mut deps: Deps) -> Deps {
    deps.reasons.retain(|r| r.via & via::LEAVES == 0);
    deps
}

/// What decides `expr` when it is a test of a value's structure ([`structure_subject`], or
/// [`keyed_membership`]): the structure rule; `None` for any other expression.
pub(crate) fn structure_test(e: &mut Eval<'_, '_>, expr: &Expr, at: TextSize) -> Option<Deps> {
    if let Some((a, b)) = identity_operands(expr) {
        let mut deps = identity(e, a, at);
        deps.merge(identity(e, b, at));
        return Some(deps);
    }
    let x = structure_subject(expr).or_else(|| keyed_membership(e, expr, at))?;
    let deps = structure(e, x, at);
    let membership =
        matches!(expr, Expr::Compare(c) if matches!(&*c.ops, [CmpOp::In | CmpOp::NotIn]));
    Some(if membership { container_test(deps) } else { deps })
}

/// `a is b` / `a is not b` between two values that are neither `None` nor a literal
/// (`param is self.bias`): whether they are one object.
fn identity_operands(expr: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Compare(c) = expr else { return None };
    let ([CmpOp::Is | CmpOp::IsNot], [right]) = (&*c.ops, &*c.comparators) else { return None };
    let plain = |x: &Expr| !x.is_literal_expr() && !matches!(x, Expr::NoneLiteral(_));
    (plain(&c.left) && plain(right)).then_some((&*c.left, right))
}

/// What decides whether a value is one object or another (`param is self.bias`): which
/// object it is, that is the code path that made it, as for a structure test
/// ([`structure`]), and also an item picked by the rank ([`via::PICKED`]: `shards[rank]` is
/// another object on every rank). The items of a batch are other objects on every rank but
/// the same *ones* relative to the code that holds them, so rank-local data decides nothing.
fn identity(e: &mut Eval<'_, '_>, x: &Expr, at: TextSize) -> Deps {
    let mut deps = e.value(x, at).whole;
    deps.reasons.retain(|r| match r.kind {
        DependenceKind::LocalData => false,
        DependenceKind::Environment | DependenceKind::Exception => true,
        _ => r.via & (via::CHOICE | via::PICKED | via::LEAVES) != 0,
    });
    deps.structure_only.clone_from(&deps.params);
    deps
}

/// The value whose structure `expr` tests, when it is such a test: `x is None`,
/// `isinstance(x, T)` (`hasattr`, `callable`, `torch.is_tensor`), `"key" in x` with a key
/// written out, or the number of dimensions or dtype of `x` compared with a constant. Wherever
/// such a test is written (an `if`, or `is_rigid = isinstance(sd[KEY], dict)`), it says what
/// kind of value `x` is, not what it holds.
fn structure_subject(expr: &Expr) -> Option<&Expr> {
    match expr {
        Expr::Compare(c) if is_none_test(c) => {
            Some(if matches!(&*c.left, Expr::NoneLiteral(_)) { &c.comparators[0] } else { &c.left })
        }
        Expr::Compare(c) if c.ops.len() == 1 => {
            if matches!(c.ops[0], CmpOp::In | CmpOp::NotIn) {
                return matches!(&*c.left, Expr::StringLiteral(_)).then(|| &c.comparators[0]);
            }
            structure_read(&c.left)
                .filter(|_| is_constant(&c.comparators[0]))
                .or_else(|| structure_read(&c.comparators[0]).filter(|_| is_constant(&c.left)))
        }
        Expr::Call(c)
            if matches!(
                crate::syntax::expr::dotted(&c.func).as_deref(),
                Some("isinstance" | "hasattr" | "callable" | "torch.is_tensor")
            ) =>
        {
            c.arguments.args.first()
        }
        // `any(isinstance(p, DTensor) for p in model.parameters())`: a structure test of each
        // item says what kind of items the iterable holds.
        Expr::Call(c)
            if matches!(crate::syntax::expr::dotted(&c.func).as_deref(), Some("any" | "all")) =>
        {
            let [Expr::Generator(g)] = &*c.arguments.args else { return None };
            let [comprehension] = &*g.generators else { return None };
            let (Expr::Name(item), Some(Expr::Name(tested))) =
                (&comprehension.target, structure_subject(&g.elt))
            else {
                return None;
            };
            (item.id == tested.id && comprehension.ifs.is_empty()).then_some(&comprehension.iter)
        }
        _ => None,
    }
}

/// `KEY in state` with a key that is the same on every rank (a constant imported or defined
/// elsewhere): whether `state` holds that key is its structure. (A key written out is
/// [`structure_subject`]'s; `rank in ranks` is not this, the key depends on the rank.)
fn keyed_membership<'x>(e: &mut Eval<'_, '_>, expr: &'x Expr, at: TextSize) -> Option<&'x Expr> {
    let Expr::Compare(c) = expr else { return None };
    let ([CmpOp::In | CmpOp::NotIn], [container]) = (&*c.ops, &*c.comparators) else {
        return None;
    };
    if !matches!(&*c.left, Expr::Name(_) | Expr::Attribute(_)) {
        return None;
    }
    let key = e.value(&c.left, at).whole;
    (key.reasons.is_empty() && key.params.is_empty()).then_some(container)
}

/// What decides a test of a value's structure (`x is None`, `isinstance(x, T)`,
/// `hasattr(x, "a")`): the code path that made the value, not its contents. A batch, a loss or
/// a model's outputs hold different numbers on every rank but the same structure (the same
/// keys, the same `None`s), so rank-local *data* decides nothing here. The same holds for
/// values computed *from* the rank (`tp_rank * vocab`, a shard picked by rank): what makes
/// one rank's value `None` or another type is a choice between assignments or returns, so
/// only the sources that reach the value through such a choice ([`via::CHOICE`]: `x = None`
/// under `if rank != 0:`, `a if rank == 0 else None`, a return under a test) decide it.
/// The environment is the exception: a read of it is itself `None` or not
/// (`os.environ.get("NODE_CACHE")`), host by host; and so is a caught exception, whose type is
/// what that rank raised; and so is a leaf of a copy that keeps only the containers
/// ([`via::LEAVES`]).
pub(crate) fn structure(e: &mut Eval<'_, '_>, x: &Expr, at: TextSize) -> Deps {
    let mut deps = structural(e.value(x, at).whole);
    // What a caller passes is decided by the same rule, once the caller is known.
    deps.structure_only.clone_from(&deps.params);
    deps
}

/// The part of `deps` that can decide a value's structure (see [`structure`]).
pub(crate) fn structural(mut deps: Deps) -> Deps {
    deps.reasons.retain(|r| match r.kind {
        DependenceKind::LocalData => false,
        // A read of the host is itself `None` or not; which exception a rank caught is of the
        // type that rank raised.
        DependenceKind::Environment | DependenceKind::Exception => true,
        // A leaf of a copy that keeps only the containers can be another type.
        _ => r.via & (via::CHOICE | via::LEAVES) != 0,
    });
    deps
}

/// The tensor whose structure `e` reads: its number of dimensions (`len(x.shape)`, `x.dim()`,
/// `x.ndim`) or its dtype (`x.dtype`). Compared with a constant, these say what kind of
/// tensor `x` is, which the code path that made it decides, not its values.
fn structure_read(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Attribute(a) if matches!(a.attr.id.as_str(), "ndim" | "dtype") => Some(&a.value),
        Expr::Call(c) => match (&*c.func, &*c.arguments.args) {
            (Expr::Attribute(a), []) if matches!(a.attr.id.as_str(), "dim" | "ndimension") => {
                Some(&a.value)
            }
            (Expr::Name(n), [Expr::Attribute(a)])
                if n.id.as_str() == "len" && a.attr.id.as_str() == "shape" =>
            {
                Some(&a.value)
            }
            _ => None,
        },
        _ => None,
    }
}

/// A literal, or a dotted name such as `torch.float16`.
fn is_constant(e: &Expr) -> bool {
    literal(e).is_some() || matches!(e, Expr::Attribute(_) | Expr::NoneLiteral(_))
}

/// `x is None`, `x is not None` (either way round).
fn is_none_test(c: &ExprCompare) -> bool {
    let ([op], [right]) = (&*c.ops, &*c.comparators) else { return false };
    matches!(op, CmpOp::Is | CmpOp::IsNot)
        && (matches!(right, Expr::NoneLiteral(_)) || matches!(&*c.left, Expr::NoneLiteral(_)))
}

/// `x != -1`, `x == -1`, `x < 0`, `x >= 0`, `x > -1` (either way round).
fn is_sentinel(c: &ExprCompare) -> bool {
    let ([op], [right]) = (&*c.ops, &*c.comparators) else { return false };
    let (value, op) = match (literal(&c.left), literal(right)) {
        (None, Some(v)) => (v, *op),
        (Some(v), None) => (v, flip(*op)),
        _ => return false,
    };
    match op {
        CmpOp::Eq | CmpOp::NotEq | CmpOp::Gt | CmpOp::LtE => value < 0,
        CmpOp::Lt | CmpOp::GtE => value <= 0,
        _ => false,
    }
}

fn is_no_rank(e: &Expr) -> bool {
    literal(e).is_some()
}

/// An integer literal, negative ones included.
fn literal(e: &Expr) -> Option<i64> {
    match e {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_i64(),
            _ => None,
        },
        Expr::UnaryOp(u) if u.op == UnaryOp::USub => literal(&u.operand).map(|v| -v),
        _ => None,
    }
}

/// The operator with its operands swapped (`-1 < x` is `x > -1`).
pub(crate) fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::LtE => CmpOp::GtE,
        CmpOp::GtE => CmpOp::LtE,
        other => other,
    }
}
