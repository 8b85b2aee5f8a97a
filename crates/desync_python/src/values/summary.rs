//! Function summaries: what a project function's result depends on, in terms of its
//! parameters, computed once per analysis. For a generator, the result is what it yields and
//! the length is how many times it yields (the loops and conditions around its `yield`s);
//! `return rank, world` keeps its elements apart so `rank, world = setup()` gets each right.
//! A parameter the function passes, unconditionally, to a collective that leaves it identical
//! on every rank (an in-place `all_reduce`) is recorded: a call of the helper agrees its argument.

use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::resolve::{FnRef, Sym, def_at};
use super::value::Eval;
use super::{Deps, MAX_CALL_DEPTH, Value, key_of};
use crate::names::bindings::{Binding, Scope, Source};
use crate::names::knowledge::{Agrees, CopyKeeps, knowledge};
use crate::syntax::module::Module;
use crate::syntax::tree::{self, Slot, header_exprs};

#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    pub name: String,
    /// Parameter names in order (`self` included).
    pub parameters: Vec<String>,
    /// What the result (or each yielded item) depends on.
    pub returns: Value,
    /// What the number of items returned or yielded depends on.
    pub length: Deps,
    /// For `return a, b`: the length of each element (`x, y = make_shard(n)`: `len(x)`).
    pub element_lengths: Option<Vec<Deps>>,
    pub is_generator: bool,
    /// Positions of parameters the function agrees across ranks in place.
    pub agrees_params: Vec<usize>,
}

impl Eval<'_, '_> {
    /// The summary of `f`, computed on first use; `None` when too deep or recursive.
    pub(crate) fn summary(&mut self, f: &FnRef) -> Option<std::rc::Rc<Summary>> {
        if self.call_depth >= MAX_CALL_DEPTH {
            return None;
        }
        let module: &Module = f.module.as_deref().unwrap_or(self.module);
        let key = (key_of(module), f.def);
        if let Some(s) = self.cx.summaries.borrow().get(&key) {
            return Some(s.clone());
        }
        if !self.cx.in_progress.borrow_mut().insert(key) {
            return None;
        }
        let summary =
            def_at(module, f.def).map(|def| summarize(self.cx, module, def, self.call_depth + 1));
        self.cx.in_progress.borrow_mut().remove(&key);
        let summary = std::rc::Rc::new(summary?);
        self.cx.summaries.borrow_mut().insert(key, summary.clone());
        Some(summary)
    }
}

fn summarize(
    cx: &super::Analysis<'_>,
    module: &Module,
    def: &StmtFunctionDef,
    depth: usize,
) -> Summary {
    let scope = Scope { function: Some(def), suite: &def.body };
    let mut eval = Eval::new(cx, module, scope, depth);
    let parameters: Vec<String> = def
        .parameters
        .iter_non_variadic_params()
        .map(|p| p.parameter.name.id.to_string())
        .chain(def.parameters.vararg.iter().map(|p| p.name.id.to_string()))
        .chain(def.parameters.kwarg.iter().map(|p| p.name.id.to_string()))
        .collect();
    let mut summary = Summary { name: def.name.id.to_string(), parameters, ..Summary::default() };

    // Returns and yields, with the statement that holds each.
    let mut exits: Vec<(&Stmt, Option<&Expr>, bool)> = Vec::new();
    tree::walk_scope(&def.body, &mut |stmt, _| {
        if let Stmt::Return(r) = stmt {
            exits.push((stmt, r.value.as_deref(), false));
        }
        for e in header_exprs(stmt) {
            crate::syntax::expr::walk(e, &mut |x| match x {
                Expr::Yield(y) => exits.push((stmt, y.value.as_deref(), true)),
                Expr::YieldFrom(y) => exits.push((stmt, Some(&*y.value), true)),
                _ => {}
            });
        }
    });
    summary.is_generator = exits.iter().any(|(_, _, y)| *y);
    let keeps = source_keeps(&mut eval, module, def, &exits)
        .or_else(|| mirrored_broadcast(&mut eval, module, &exits));
    let mut first = true;
    let mut first_length = true;
    for (stmt, value, is_yield) in &exits {
        if summary.is_generator && !is_yield {
            continue;
        }
        // `if not dist.is_initialized(): return flag`: a single process has no peers to
        // disagree with, so that exit says nothing about what ranks see.
        if !is_yield && single_process(&mut eval, module, stmt) {
            continue;
        }
        let at = stmt.start();
        // The broadcast source's own value is what the others return (or, for a copy that
        // keeps the containers, of the same structure: added below).
        if keeps.as_ref().is_some_and(|k| k.source_exits.contains(&at)) {
            continue;
        }
        let receives = keeps.as_ref().is_some_and(|k| k.receiver_exits.contains(&at));
        // A returned test of a value's structure is decided as in an `if` (`eval.assigned`).
        let mut v = value
            .map(|e| if *is_yield { eval.value(e, at) } else { eval.assigned(e, at) })
            .unwrap_or_default();
        // A constant returned under `if rank == 0:` still differs by rank; what the receivers
        // of a broadcast return is what the source returns.
        if !receives {
            v.whole.merge(guards(&mut eval, module, stmt));
        }
        if first {
            summary.returns = v;
            first = false;
        } else {
            summary.returns.merge(v);
        }
        if summary.is_generator {
            summary.length.merge(enclosing_counts(&mut eval, module, stmt));
        } else if let Some(e) = value {
            summary.length.merge(eval.length(e, at));
            let elements: Option<Vec<Deps>> = match e {
                Expr::Tuple(t) => Some(t.elts.iter().map(|x| eval.length(x, at)).collect()),
                _ => None,
            };
            summary.element_lengths = match (summary.element_lengths.take(), elements) {
                (None, Some(new)) if first_length => Some(new),
                (Some(mut old), Some(new)) if old.len() == new.len() => {
                    for (o, n) in old.iter_mut().zip(new) {
                        o.merge(n);
                    }
                    Some(old)
                }
                _ => None,
            };
            first_length = false;
        }
    }
    if summary.is_generator {
        // An early `return` (or `break` out of the yielding loop) ends the generator early.
        let mut stops: Vec<&Stmt> = Vec::new();
        tree::walk_scope(&def.body, &mut |stmt, _| {
            if matches!(stmt, Stmt::Return(_) | Stmt::Break(_)) {
                stops.push(stmt);
            }
        });
        for stop in stops {
            summary.length.merge(guards(&mut eval, module, stop));
        }
    }
    if let Some(leaves) = keeps.and_then(|k| k.leaves) {
        let reason = Deps::reason(crate::syntax::types::DependenceKind::RankId, leaves);
        summary.returns.whole.merge(reason.through(super::via::LEAVES));
    }
    summary.agrees_params = agreed_parameters(&mut eval, def, &summary.parameters);
    summary
}

/// A helper that broadcasts a value from a source rank, where the source returns its own value
/// and the others return what they received: `objects[0] = state` (or a copy of `state`) on the
/// source, `broadcast_object_list(objects, src=0)`, then `if rank == 0: return state` and
/// `return objects[0]` (torch FSDP's `_broadcast_processed_state`). Every rank returns the same
/// value, so the rank test around the returns decides nothing; when what was sent is a copy
/// that keeps only the containers (`tree_map_only(torch.Tensor, f, state)`), the leaves can
/// still differ ([`via::LEAVES`](super::via::LEAVES)).
#[derive(Debug, Default)]
struct SourceKeeps {
    /// The starts of the source rank's returns (`return state`).
    source_exits: Vec<TextSize>,
    /// The starts of the other ranks' returns (`return objects[0]`).
    receiver_exits: Vec<TextSize>,
    /// For a copy that keeps only the containers: why the leaves can differ (evidence).
    leaves: Option<String>,
}

/// Which side of the broadcast a return is on.
enum Side {
    Source,
    Receiver,
}

fn source_keeps(
    eval: &mut Eval<'_, '_>,
    module: &Module,
    def: &StmtFunctionDef,
    exits: &[(&Stmt, Option<&Expr>, bool)],
) -> Option<SourceKeeps> {
    // The broadcast, a statement of the body's top level (so it runs on every call).
    let (container, src, at) = def.body.iter().find_map(|stmt| broadcast_into(eval, stmt))?;
    let mut keeps = SourceKeeps::default();
    let mut kept: Option<&str> = None;
    for (stmt, value, is_yield) in exits {
        if *is_yield {
            return None;
        }
        if single_process(eval, module, stmt) {
            continue;
        }
        let value = (*value)?;
        if stmt.start() < at.start() {
            return None;
        }
        match side_of(eval, module, stmt, src)? {
            Side::Source => {
                let Expr::Name(n) = value else { return None };
                if kept.is_some_and(|k| k != n.id.as_str()) {
                    return None;
                }
                kept = Some(n.id.as_str());
                keeps.source_exits.push(stmt.start());
            }
            Side::Receiver => {
                if !reads_container(value, container) {
                    return None;
                }
                keeps.receiver_exits.push(stmt.start());
            }
        }
    }
    let kept = kept?;
    if keeps.receiver_exits.is_empty() {
        return None;
    }
    // Everything the source put into the container is the kept value or a copy of it (what
    // the others put in is overwritten by the broadcast).
    let puts = puts_into(&def.body, container, at.start());
    let first_put = puts.iter().map(Ranged::start).min()?;
    for put in puts {
        match copy_of(eval, put, kept)? {
            CopyKeeps::Everything => {}
            CopyKeeps::Structure => {
                keeps.leaves = Some(format!(
                    "`{kept}` on the broadcast source, `{}` (line {}) on the others: the same \
                     containers, leaves that can differ",
                    crate::syntax::expr::snippet(module.text(put.range())),
                    module.line_of(put.start())
                ));
            }
        }
    }
    // The source returns the value it sent only if nothing rebinds it in between.
    let last = module.line_of(def.end());
    if module.bound_in(module.line_of(first_put), last).contains(&kept) {
        return None;
    }
    Some(keeps)
}

/// A helper whose source and receivers each issue their own broadcast from the same source:
/// `if rank == src: broadcast_object_list([obj], src=src); return obj`, and on the others
/// `recv = [None]; broadcast_object_list(recv, src=src); return recv[0]` (a process-group
/// wrapper's `broadcast_object`). Both sides run the same broadcast, so what the receivers
/// return is what the source sent and returns itself: the rank test between the two returns
/// decides nothing. Other returns (a single-rank shortcut, another transport) keep their
/// value and tests; a side whose broadcast names another source, or whose return is not what
/// that broadcast carries (the receivers returning their own argument), leaves the helper as
/// it was.
fn mirrored_broadcast(
    eval: &mut Eval<'_, '_>,
    module: &Module,
    exits: &[(&Stmt, Option<&Expr>, bool)],
) -> Option<SourceKeeps> {
    let mut keeps = SourceKeeps::default();
    let mut source: Option<String> = None;
    for (stmt, value, is_yield) in exits {
        if *is_yield {
            return None;
        }
        let Some(value) = value else { continue };
        let Some(path) = module.path(module.line_of(stmt.start())) else { continue };
        let Some(last) = path.scope_levels(module).last() else { continue };
        if last.stmt().range() != stmt.range() {
            continue;
        }
        // The last broadcast before the return, in the return's own block (so it ran).
        let Some((sent, src, call)) =
            last.suite[..last.index].iter().rev().find_map(|s| broadcast_of(eval, s))
        else {
            continue;
        };
        let carried = match (sent, value) {
            // The source sends `[obj]` and returns `obj`, not rebound since.
            (Expr::List(l), Expr::Name(n))
                if matches!(&*l.elts, [Expr::Name(m)] if m.id == n.id)
                    && !module
                        .bound_in(module.line_of(call.start()), module.line_of(stmt.start()))
                        .contains(&n.id.as_str()) =>
            {
                Side::Source
            }
            (Expr::Name(container), _) if reads_container(value, container.id.as_str()) => {
                Side::Receiver
            }
            _ => continue,
        };
        match (carried, side_of(eval, module, stmt, src)) {
            (Side::Source, Some(Side::Source)) => keeps.source_exits.push(stmt.start()),
            (Side::Receiver, Some(Side::Receiver)) => keeps.receiver_exits.push(stmt.start()),
            _ => continue,
        }
        let text = module.text(src.range());
        if source.as_deref().is_some_and(|s| s != text) {
            return None;
        }
        source = Some(text.to_string());
    }
    (!keeps.source_exits.is_empty() && !keeps.receiver_exits.is_empty()).then_some(keeps)
}

impl<'m> Eval<'_, 'm> {
    /// The receivers' side of a broadcast whose source keeps what it sent, written inline:
    /// `box = [stop if rank == 0 else None]`, `broadcast_object_list(box, 0)`, then `if rank !=
    /// 0: stop = box[0]` (yolov5's early stop). The receivers take the source's value, and the
    /// source already holds it (it put `stop` itself into the box, and nothing rebound `stop`
    /// since), so after the `if` every rank holds the source's `stop`. The start of that `if`,
    /// whose test then decides nothing about the name; `None` for any other binding.
    pub(crate) fn received_from_source(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
    ) -> Option<TextSize> {
        let Source::Value(value) = binding.source else { return None };
        let module: &'m Module = self.module;
        let path = module.path(module.line_of(binding.at))?;
        let levels = path.scope_levels(module).to_vec();
        let (last, outer) = levels.split_last()?;
        let Some(Stmt::If(s)) = last.owner else { return None };
        let around = outer.last()?;
        // The broadcast: the last one into a container before the `if`, in the same block.
        let before = &around.suite[..around.index];
        let (index, (container, src, call)) = before
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, stmt)| broadcast_into(self, stmt).map(|b| (i, b)))?;
        if !reads_container(value, container) {
            return None;
        }
        let equal = source_test(self, module, &s.test, src)?;
        let on_receivers = match last.slot {
            Slot::Body => !equal,
            Slot::Clause(0)
                if s.elif_else_clauses.len() == 1 && s.elif_else_clauses[0].test.is_none() =>
            {
                equal
            }
            _ => return None,
        };
        if !on_receivers {
            return None;
        }
        // What was put into the container is the name itself (the others' `None` is
        // overwritten), and nothing rebinds the name from there to the `if`.
        let puts = puts_into(&before[..index], container, call.start());
        let first = puts.iter().map(Ranged::start).min()?;
        if !puts.iter().all(|p| matches!(p, Expr::Name(n) if n.id.as_str() == name)) {
            return None;
        }
        let until = module.line_of(s.start()).saturating_sub(1);
        if module.bound_in(module.line_of(first), until).contains(&name) {
            return None;
        }
        Some(s.start())
    }
}

/// `broadcast_object_list(objects, src=0)` (a table broadcast that fills its first argument):
/// the container's name, the source as written, and the call.
fn broadcast_into<'s>(
    eval: &mut Eval<'_, '_>,
    stmt: &'s Stmt,
) -> Option<(&'s str, &'s Expr, &'s ruff_python_ast::ExprCall)> {
    let (sent, src, c) = broadcast_of(eval, stmt)?;
    let Expr::Name(container) = sent else { return None };
    Some((container.id.as_str(), src, c))
}

/// [`broadcast_into`] for any first argument (`[obj]` written out on the source): what is
/// sent or filled, the source as written, and the call.
fn broadcast_of<'s>(
    eval: &mut Eval<'_, '_>,
    stmt: &'s Stmt,
) -> Option<(&'s Expr, &'s Expr, &'s ruff_python_ast::ExprCall)> {
    let Stmt::Expr(s) = stmt else { return None };
    let Expr::Call(c) = &*s.value else { return None };
    // A cheap test before resolving (every summary asks): the table's broadcasts all end so.
    if !crate::syntax::expr::last_segment(&c.func).is_some_and(|w| w.contains("broadcast")) {
        return None;
    }
    let Sym::Path(p) = eval.resolve(&c.func, c.start()) else { return None };
    let api = knowledge().api(&p)?;
    if api.op.as_deref() != Some("broadcast") || api.agrees != Some(Agrees::Arg0) {
        return None;
    }
    let sent = c.arguments.args.first()?;
    let src = match c.arguments.find_keyword("group_src") {
        Some(k) => &k.value,
        None => c.arguments.find_argument_value("src", 1)?,
    };
    Some((sent, src, c))
}

/// Whether `stmt` returns on the broadcast source (`if rank == src:`) or on the others (no test
/// around it, or the `else` of that test); `None` when other tests or blocks decide it.
fn side_of(eval: &mut Eval<'_, '_>, module: &Module, stmt: &Stmt, src: &Expr) -> Option<Side> {
    let path = module.path(module.line_of(stmt.start()))?;
    let mut test: Option<(&ruff_python_ast::StmtIf, Slot)> = None;
    for level in path.scope_levels(module).to_vec() {
        match level.owner {
            None | Some(Stmt::FunctionDef(_) | Stmt::With(_)) => {}
            Some(Stmt::If(s)) if test.is_none() => test = Some((s, level.slot)),
            Some(_) => return None,
        }
    }
    let Some((s, slot)) = test else { return Some(Side::Receiver) };
    let equal = source_test(eval, module, &s.test, src)?;
    let on_source = match slot {
        Slot::Body => equal,
        Slot::Clause(0)
            if s.elif_else_clauses.len() == 1 && s.elif_else_clauses[0].test.is_none() =>
        {
            !equal
        }
        _ => return None,
    };
    Some(if on_source { Side::Source } else { Side::Receiver })
}

/// `rank == src` (`Some(true)`) or `rank != src` (`Some(false)`), either way round, where
/// `rank` is a rank id and `src` is written as the broadcast's source is.
fn source_test(eval: &mut Eval<'_, '_>, module: &Module, test: &Expr, src: &Expr) -> Option<bool> {
    let Expr::Compare(c) = test else { return None };
    let ([op], [right]) = (&*c.ops, &*c.comparators) else { return None };
    let equal = match op {
        ruff_python_ast::CmpOp::Eq => true,
        ruff_python_ast::CmpOp::NotEq => false,
        _ => return None,
    };
    // The source as written, or the index of a group's member list it is taken from
    // (`src=self.ranks[src]` beside `if self.rank_in_group == src`: the group's rank `src`).
    let same = |e: &Expr| {
        module.text(e.range()) == module.text(src.range())
            || matches!(src, Expr::Subscript(s) if module.text(e.range()) == module.text(s.slice.range()))
    };
    let rank = if same(right) {
        &*c.left
    } else if same(&c.left) {
        right
    } else {
        return None;
    };
    let is_rank = eval
        .value(rank, test.start())
        .whole
        .reasons
        .iter()
        .any(|r| r.kind == crate::syntax::types::DependenceKind::RankId);
    is_rank.then_some(equal)
}

/// `objects` or `objects[0]`.
fn reads_container(value: &Expr, container: &str) -> bool {
    let base = match value {
        Expr::Subscript(s) if matches!(&*s.slice, Expr::NumberLiteral(_)) => &*s.value,
        other => other,
    };
    matches!(base, Expr::Name(n) if n.id.as_str() == container)
}

/// The values put into `container` before `until`: the items of a list assigned to it
/// (`[state]`, `[state if rank == 0 else None]`), items assigned into it (`objects[0] = x`) and
/// appended; `None`s left out.
fn puts_into<'d>(body: &'d [Stmt], container: &str, until: TextSize) -> Vec<&'d Expr> {
    let names = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == container);
    let mut values: Vec<&Expr> = Vec::new();
    tree::walk_scope(body, &mut |stmt, _| {
        if stmt.start() >= until {
            return;
        }
        match stmt {
            Stmt::Assign(a) if a.targets.iter().any(&names) => {
                if let Expr::List(l) = &*a.value {
                    values.extend(l.elts.iter());
                } else {
                    values.push(&a.value);
                }
            }
            Stmt::AnnAssign(a) if names(&a.target) => {
                if let Some(Expr::List(l)) = a.value.as_deref() {
                    values.extend(l.elts.iter());
                } else if let Some(v) = a.value.as_deref() {
                    values.push(v);
                }
            }
            Stmt::Assign(a)
                if a.targets.iter().any(|t| matches!(t, Expr::Subscript(s) if names(&s.value))) =>
            {
                values.push(&a.value);
            }
            Stmt::Expr(e) => {
                if let Expr::Call(c) = &*e.value
                    && let Expr::Attribute(m) = &*c.func
                    && names(&m.value)
                    && m.attr.id.as_str() == "append"
                {
                    values.extend(c.arguments.args.iter());
                }
            }
            _ => {}
        }
    });
    let mut out = Vec::new();
    for v in values {
        match v {
            Expr::If(x) => out.extend([&*x.body, &*x.orelse]),
            other => out.push(other),
        }
    }
    out.retain(|v| !matches!(v, Expr::NoneLiteral(_)));
    out
}

/// What `put` keeps of `kept`: everything when it is `kept` itself or an equal copy
/// (`copy.deepcopy(kept)`), the containers for a copy that maps the leaves; `None` for any
/// other value.
fn copy_of(eval: &mut Eval<'_, '_>, put: &Expr, kept: &str) -> Option<CopyKeeps> {
    let is_kept = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == kept);
    match put {
        e if is_kept(e) => Some(CopyKeeps::Everything),
        Expr::Call(c) if c.arguments.args.iter().any(is_kept) => {
            let Sym::Path(p) = eval.resolve(&c.func, c.start()) else { return None };
            knowledge().copy_keeps(&p)
        }
        _ => None,
    }
}

/// The tests of the `if`s around `stmt` in its function, and the `except` it sits in.
fn guards(eval: &mut Eval<'_, '_>, module: &Module, stmt: &Stmt) -> Deps {
    let mut out = Deps::default();
    let Some(path) = module.path(module.line_of(stmt.start())) else { return out };
    for level in path.scope_levels(module).to_vec() {
        match (level.owner, level.slot) {
            (Some(Stmt::If(s)), Slot::Body) => {
                out.merge(super::condition::decision(eval, &s.test, s.start()));
            }
            (Some(Stmt::If(s)), Slot::Clause(i)) => {
                out.merge(super::condition::decision(eval, &s.test, s.start()));
                for c in s.elif_else_clauses.iter().take(i + 1).filter_map(|c| c.test.as_ref()) {
                    out.merge(super::condition::decision(eval, c, c.start()));
                }
            }
            // A probe of the environment raises alike on every rank ([`Eval::probes_environment`]).
            (Some(Stmt::Try(t)), Slot::Handler(_)) if eval.probes_environment(&t.body) => {}
            (Some(Stmt::Try(t)), Slot::Handler(i)) => {
                let caught = Deps::reason(
                    crate::syntax::types::DependenceKind::Exception,
                    format!("the `except` at line {}", module.line_of(t.start())),
                );
                // As in an assignment's control dependence: a handler of structural exceptions
                // only (`except ModuleNotFoundError: return False`) is indirect evidence.
                let structural =
                    t.handlers.get(i).is_some_and(crate::values::classify::structural_handler);
                out.merge(if structural { caught.through(super::via::STRUCTURAL) } else { caught });
            }
            _ => {}
        }
    }
    out.through(super::via::CHOICE)
}

/// Predicates that are false exactly when the job does not run distributed (torch 2.11's
/// `torch.distributed.is_initialized`/`is_available`, and `DeepSpeed`'s re-export).
const DISTRIBUTED_PREDICATES: &[&str] = &[
    "torch.distributed.is_initialized",
    "torch.distributed.is_available",
    "deepspeed.comm.is_initialized",
];

/// `is_initialized()`, or several distributed predicates joined by `and`: true on every rank of
/// a distributed job.
fn distributed_test(eval: &mut Eval<'_, '_>, test: &Expr) -> bool {
    distributed_test_at(eval, test, 0)
}

/// How deep project functions are followed to a distributed predicate.
const MAX_PREDICATE_DEPTH: usize = 2;

fn distributed_test_at(eval: &mut Eval<'_, '_>, test: &Expr, depth: usize) -> bool {
    match test {
        Expr::BoolOp(b) if b.op == ruff_python_ast::BoolOp::And => {
            b.values.iter().all(|v| distributed_test_at(eval, v, depth))
        }
        Expr::Call(c) => distributed_predicate(eval, c, depth),
        _ => false,
    }
}

/// Whether `c` calls a distributed predicate: one of the table's, or a project function that
/// only answers one (`def is_distributed(): return dist.is_available() and
/// dist.is_initialized()`, or the `if not dist.is_available(): return False` ... `return True`
/// form).
pub(crate) fn distributed_predicate(
    eval: &mut Eval<'_, '_>,
    c: &ruff_python_ast::ExprCall,
    depth: usize,
) -> bool {
    match eval.resolve(&c.func, c.start()) {
        Sym::Path(p) => DISTRIBUTED_PREDICATES.contains(&p.as_str()),
        Sym::Function(f) if depth < MAX_PREDICATE_DEPTH && c.arguments.is_empty() => eval
            .in_function(&f, |there, def| answers_distributed(there, &def.body, depth + 1))
            .unwrap_or(false),
        _ => false,
    }
}

/// A body that answers whether the job is distributed: `return <distributed test>`, or guards
/// `if not <distributed test>: return False` followed by `return True` (docstrings aside).
fn answers_distributed(eval: &mut Eval<'_, '_>, body: &[Stmt], depth: usize) -> bool {
    let is_bool = |e: Option<&Expr>, value: bool| matches!(e, Some(Expr::BooleanLiteral(b)) if b.value == value);
    let stmts: Vec<&Stmt> = body
        .iter()
        .filter(|s| !matches!(s, Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_))))
        .collect();
    let Some((last, guards)) = stmts.split_last() else { return false };
    let Stmt::Return(r) = last else { return false };
    if guards.is_empty() {
        return r.value.as_deref().is_some_and(|v| distributed_test_at(eval, v, depth));
    }
    is_bool(r.value.as_deref(), true)
        && guards.iter().all(|g| match g {
            Stmt::If(i) if i.elif_else_clauses.is_empty() => {
                let negated = match &*i.test {
                    Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not => Some(&*u.operand),
                    _ => None,
                };
                matches!(&*i.body, [Stmt::Return(ret)] if is_bool(ret.value.as_deref(), false))
                    && negated.is_some_and(|t| distributed_test_at(eval, t, depth))
            }
            _ => false,
        })
}

/// Whether `stmt` sits in the body of `if not <distributed predicate>()`, or of a test that
/// the group has one member ([`one_member`]).
fn single_process(eval: &mut Eval<'_, '_>, module: &Module, stmt: &Stmt) -> bool {
    let Some(path) = module.path(module.line_of(stmt.start())) else { return false };
    path.scope_levels(module).to_vec().into_iter().any(|level| {
        let (Some(Stmt::If(s)), Slot::Body) = (level.owner, level.slot) else { return false };
        if one_member(eval, &s.test) {
            return true;
        }
        let Expr::UnaryOp(u) = &*s.test else { return false };
        if u.op != ruff_python_ast::UnaryOp::Not {
            return false;
        }
        let Expr::Call(c) = &*u.operand else { return false };
        distributed_predicate(eval, c, 0)
    })
}

/// `size == 1`, `size <= 1` or `size < 2` (either way round) where `size` is the number of
/// ranks in a process group ([`Eval::counts_group_members`]): `if self.world_size == 1: return
/// inputs[0]` is a helper's shortcut for a group of one rank, which has no peer to disagree
/// with (what the helper returns otherwise is what its collective over the group gives).
pub(crate) fn one_member(eval: &mut Eval<'_, '_>, test: &Expr) -> bool {
    use ruff_python_ast::CmpOp::{Eq, Gt, GtE, Lt, LtE};
    let Expr::Compare(c) = test else { return false };
    let ([op], [right]) = (&*c.ops, &*c.comparators) else { return false };
    let int = crate::syntax::expr::int_literal;
    let size = match (op, int(&c.left), int(right)) {
        (Eq | LtE, _, Some(1)) | (Lt, _, Some(2)) => &*c.left,
        (Eq | GtE, Some(1), _) | (Gt, Some(2), _) => right,
        _ => return false,
    };
    eval.counts_group_members(size, test.start(), 0)
}

/// How many times `stmt` runs: the lengths of the `for`s and the tests of the `while`s and
/// `if`s around it in its function.
fn enclosing_counts(eval: &mut Eval<'_, '_>, module: &Module, stmt: &Stmt) -> Deps {
    let mut out = guards(eval, module, stmt);
    let Some(path) = module.path(module.line_of(stmt.start())) else { return out };
    for level in path.scope_levels(module).to_vec() {
        match (level.owner, level.slot) {
            (Some(Stmt::For(f)), Slot::Body) => out.merge(eval.length(&f.iter, f.start())),
            (Some(Stmt::While(w)), Slot::Body) => out.merge(eval.value(&w.test, w.start()).whole),
            _ => {}
        }
    }
    out
}

/// Parameters passed, at the top level of the body (so on every call) or in the body of a
/// top-level `if` that holds on every rank of a distributed job, as the first argument of a
/// collective that leaves it identical on every rank.
fn agreed_parameters(
    eval: &mut Eval<'_, '_>,
    def: &StmtFunctionDef,
    parameters: &[String],
) -> Vec<usize> {
    let mut out = Vec::new();
    // `if dist.is_available() and dist.is_initialized(): dist.all_reduce(t)`: the body runs on
    // every rank of a distributed job; a single process has no peers to disagree with.
    let mut stmts: Vec<&Stmt> = Vec::new();
    for stmt in &def.body {
        match stmt {
            Stmt::If(s) if distributed_test(eval, &s.test) => stmts.extend(s.body.iter()),
            _ => stmts.push(stmt),
        }
    }
    for stmt in stmts {
        let Stmt::Expr(s) = stmt else { continue };
        let Expr::Call(c) = &*s.value else { continue };
        let Sym::Path(p) = eval.resolve(&c.func, c.start()) else { continue };
        let Some(Expr::Name(agreed)) = knowledge().api(&p).and_then(|a| a.agreed_argument(c))
        else {
            continue;
        };
        let Some(index) = parameters.iter().position(|p| p == agreed.id.as_str()) else { continue };
        if !out.contains(&index) {
            out.push(index);
        }
    }
    out
}
