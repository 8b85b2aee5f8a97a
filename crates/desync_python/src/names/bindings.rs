//! Where a local name gets its value: the assignments, loop targets, `with ... as` targets,
//! `except ... as` names and parameters of one scope. Flow is approximated by source order: a
//! use sees the latest binding that ends before it, and when none does (a value carried over
//! from the previous loop iteration) the last binding in the scope. Names a function never
//! binds are looked up at module level (`RANK = int(os.environ["RANK"])` at the top of a file).

use ruff_python_ast::{ExceptHandler, Expr, Stmt, StmtClassDef, StmtFunctionDef};
use std::sync::Arc;

use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::syntax::expr;
use crate::syntax::module::{Module, ScopeIndex};
use crate::syntax::tree::{self, header_exprs};

/// The code a name is looked up in: a function body, or the module body.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub function: Option<&'a StmtFunctionDef>,
    pub suite: &'a [Stmt],
}

impl<'a> Scope<'a> {
    /// The innermost function around `line`, or the module.
    pub(crate) fn at(module: &'a Module, line: u32) -> Scope<'a> {
        Scope::of(module, module.path(line).and_then(|p| p.innermost_function(module)))
    }

    /// The body of `function`, or the module when there is none.
    pub(crate) fn of(module: &'a Module, function: Option<&'a StmtFunctionDef>) -> Scope<'a> {
        match function {
            Some(def) => Scope { function: Some(def), suite: &def.body },
            None => Scope::module(module),
        }
    }

    pub(crate) fn module(module: &'a Module) -> Scope<'a> {
        Scope { function: None, suite: module.body() }
    }
}

/// What a binding assigns from.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    /// `x = value`, `x: T = value`, `(x := value)`, or one element of a tuple unpacking.
    Value(&'a Expr),
    /// `x op= value`: the value combined with the previous binding of `x`.
    Augmented(&'a Expr),
    /// `for x in iter`.
    LoopItem(&'a Expr),
    /// One name of a tuple target, `for step, x in iter`: element `usize` of each item.
    LoopElement(&'a Expr, usize),
    /// The index of `enumerate(iter)` or the variable of `range(...)`: it counts iterations, so
    /// it can differ across ranks only where the number of iterations can (the expression is
    /// the iterable counted: the `range(...)` call, or `enumerate`'s argument).
    LoopCounter(&'a Expr),
    /// One name of a tuple target unpacking a value that is not a tuple display:
    /// `rank, world = setup()` binds element `usize` of the value.
    Element(&'a Expr, usize),
    /// `with ctx as x`.
    WithItem(&'a Expr),
    /// `except T as x`.
    Caught,
    /// A parameter of the scope's function.
    Parameter,
    /// `import a.b as c` (module `a.b`), `from m import n` (module `m`, name `n`); `level`
    /// counts the dots of a relative import.
    Import { module: &'a str, name: Option<&'a str>, level: u32 },
    /// A `def` of the scope.
    Function(&'a StmtFunctionDef),
    /// A `class` of the scope.
    Class(&'a StmtClassDef),
}

/// One binding of a name.
#[derive(Clone, Copy)]
pub(crate) struct Binding<'a> {
    pub source: Source<'a>,
    /// The binding takes effect from here on (end of the assignment, of the loop target...).
    pub effective: TextSize,
    /// Start of the statement or clause that binds, for line numbers and text.
    pub at: TextSize,
    /// The scope the binding lives in (the module, for globals read inside a function).
    pub scope: Scope<'a>,
}

/// The binding of `name` that reaches offset `use_at`, if any.
pub(crate) fn lookup<'a>(
    module: &'a Module,
    scope: Scope<'a>,
    name: &str,
    use_at: TextSize,
) -> Option<Binding<'a>> {
    let all = bindings(module, scope, name);
    // The latest binding before the use that can reach it: one in another clause of an `if`
    // (or `match`) that holds the use never runs before it (`v = ...` in the `if` body, then
    // `gather(v)` in the `elif`), so the latest one outside such clauses is taken, if any.
    let earlier = || all.iter().filter(|b| b.effective <= use_at);
    let reaching = match earlier().max_by_key(|b| b.effective) {
        Some(latest) if in_sibling_clauses(scope.suite, latest.at, use_at) => earlier()
            .filter(|b| !in_sibling_clauses(scope.suite, b.at, use_at))
            .max_by_key(|b| b.effective)
            .or(Some(latest)),
        latest => latest,
    };
    if let Some(b) = reaching.or_else(|| all.iter().max_by_key(|b| b.effective)) {
        return Some(*b);
    }
    if scope.function.is_some() {
        return bindings(module, Scope::module(module), name)
            .into_iter()
            .max_by_key(|b| b.effective);
    }
    None
}

/// Whether positions `a` and `b` of `suite` lie in different clauses of one `if` (its body and
/// an `elif`/`else`, or two of those) or in different `case`s of one `match`: one never runs
/// before the other in the same pass.
fn in_sibling_clauses(suite: &[Stmt], a: TextSize, b: TextSize) -> bool {
    let mut suite = suite;
    for _ in 0..tree::MAX_DEPTH {
        // Statements are in source order: the one that can hold both is the first that ends
        // after the earlier position.
        let first = suite.partition_point(|s| s.end() <= a.min(b));
        let Some(stmt) =
            suite.get(first).filter(|s| s.range().contains(a) && s.range().contains(b))
        else {
            return false;
        };
        // The blocks follow each other in source order; a position belongs to the first one
        // that ends after it (a use is placed at the start of its line, before the indent).
        let blocks: Vec<_> =
            tree::blocks(stmt).into_iter().filter(|bl| !bl.suite.is_empty()).collect();
        let block_of =
            |at| blocks.iter().position(|bl| bl.suite.last().is_some_and(|l| at < l.end()));
        match (block_of(a), block_of(b)) {
            (Some(x), Some(y)) if x == y => suite = blocks[x].suite,
            (Some(_), Some(_)) => return matches!(stmt, Stmt::If(_) | Stmt::Match(_)),
            _ => return false,
        }
    }
    false
}

/// Every binding of `name` in `scope` (a scope of `module`), in no particular order.
pub(crate) fn bindings<'a>(module: &Module, scope: Scope<'a>, name: &str) -> Vec<Binding<'a>> {
    let mut found = Vec::new();
    if let Some(def) = scope.function {
        let p = &def.parameters;
        let named = p
            .iter_non_variadic_params()
            .map(|p| &p.parameter)
            .chain(p.vararg.as_deref())
            .chain(p.kwarg.as_deref())
            .any(|param| param.name.id.as_str() == name);
        if named {
            found.push((Source::Parameter, def.start(), def.start()));
        }
    }
    let index = module.scope_index(scope.suite);
    let walrus = module.has_walrus();
    for &at in index.binders.of(name) {
        if let Some(stmt) = tree::stmt_starting_at(scope.suite, at) {
            stmt_bindings(stmt, name, walrus, &mut found);
        }
    }
    found
        .into_iter()
        .map(|(source, effective, at)| Binding { source, effective, at, scope })
        .collect()
}

/// A scope's index for [`Module::scope_index`]: the statements that may bind each name (an
/// over-approximation: [`stmt_bindings`] decides) and the calls that pass a name first.
/// `walrus`: whether the module's text has a `:=` at all (without one, no statement's
/// expressions need walking for walrus targets).
pub(crate) fn index(suite: &[Stmt], walrus: bool) -> crate::syntax::module::ScopeIndex {
    let mut out = crate::syntax::module::ScopeIndex::default();
    tree::walk_scope(suite, &mut |stmt, _| {
        let mut names: Vec<&str> = Vec::new();
        bound_names(stmt, walrus, &mut names);
        names.sort_unstable();
        names.dedup();
        for name in names {
            out.binders.note(name, stmt.start());
        }
        if let Stmt::Expr(s) = stmt
            && let Expr::Call(c) = awaited(&s.value)
        {
            // What a forwarder (`asyncio.to_thread(f, name)`) passes on comes later.
            let forwards = crate::syntax::expr::last_segment(&c.func)
                .is_some_and(|s| crate::names::knowledge::knowledge().may_forward(s));
            let passed = if forwards {
                &c.arguments.args[..]
            } else {
                &c.arguments.args[..1.min(c.arguments.args.len())]
            };
            // And any name passed by keyword: a collective's agreed argument may be
            // (`dist.broadcast(tensor=t, src=0)`).
            let by_keyword = c.arguments.keywords.iter().map(|k| &k.value);
            for a in passed.iter().chain(by_keyword) {
                if let Expr::Name(n) = a {
                    out.first_argument_calls.note(n.id.as_str(), stmt.start());
                }
            }
        }
        if matches!(stmt, Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_) | Stmt::Raise(_)) {
            out.jumps.push(stmt.start());
        }
    });
    out
}

/// `await x` → `x`; anything else as it is.
pub(crate) fn awaited(e: &Expr) -> &Expr {
    match e {
        Expr::Await(a) => &a.value,
        e => e,
    }
}

/// Every name `stmt` could bind in its own scope (targets, loop and `with` variables,
/// handler names, `def`/`class` names, import aliases, walrus targets of its header): the
/// names inside what [`stmt_binds`] visits (`self` for `self.x = ...`, as before).
fn bound_names<'a>(stmt: &'a Stmt, walrus: bool, out: &mut Vec<&'a str>) {
    stmt_binds_in(stmt, walrus, &mut |bound| match bound {
        Bound::Name(n) => out.push(n),
        Bound::Target(e) => expr::walk(e, &mut |sub| {
            if let Expr::Name(n) = sub {
                out.push(n.id.as_str());
            }
        }),
    });
}

/// What a statement binds, for [`crate::Module::bound_in`]: a target expression (a name,
/// an attribute, an item), or a name a statement binds without one (`def`, `import`,
/// `except ... as e`).
pub(crate) enum Bound<'a> {
    Target(&'a Expr),
    Name(&'a str),
}

/// Visits what `stmt` binds itself (not its blocks): assignment, augmented and annotated
/// targets, `for` and `with` targets, handler names, `def`/`class` names, import names and
/// the walrus targets of its header. Walrus targets are visited whole; the others as written.
fn stmt_binds<'a>(stmt: &'a Stmt, visit: &mut dyn FnMut(Bound<'a>)) {
    stmt_binds_in(stmt, true, visit);
}

/// [`stmt_binds`], looking for walrus targets only when `walrus` (the module has a `:=`).
fn stmt_binds_in<'a>(stmt: &'a Stmt, walrus: bool, visit: &mut dyn FnMut(Bound<'a>)) {
    match stmt {
        Stmt::Assign(s) => s.targets.iter().for_each(|t| visit(Bound::Target(t))),
        Stmt::AnnAssign(s) => visit(Bound::Target(&s.target)),
        Stmt::AugAssign(s) => visit(Bound::Target(&s.target)),
        Stmt::For(s) => visit(Bound::Target(&s.target)),
        Stmt::With(s) => s
            .items
            .iter()
            .filter_map(|i| i.optional_vars.as_deref())
            .for_each(|v| visit(Bound::Target(v))),
        Stmt::Try(s) => {
            for ExceptHandler::ExceptHandler(h) in &s.handlers {
                if let Some(n) = &h.name {
                    visit(Bound::Name(n.id.as_str()));
                }
            }
        }
        Stmt::FunctionDef(s) => visit(Bound::Name(s.name.id.as_str())),
        Stmt::ClassDef(s) => visit(Bound::Name(s.name.id.as_str())),
        Stmt::Import(s) => s.names.iter().for_each(|a| {
            visit(Bound::Name(match &a.asname {
                Some(n) => n.id.as_str(),
                None => a.name.id.as_str().split('.').next().unwrap_or(""),
            }));
        }),
        Stmt::ImportFrom(s) => s.names.iter().for_each(|a| {
            visit(Bound::Name(a.asname.as_ref().map_or(a.name.id.as_str(), |n| n.id.as_str())));
        }),
        _ => {}
    }
    if !walrus {
        return;
    }
    for e in header_exprs(stmt) {
        expr::walk(e, &mut |sub| {
            if let Expr::Named(n) = sub
                && matches!(&*n.target, Expr::Name(_))
            {
                visit(Bound::Target(&n.target));
            }
        });
    }
}

/// Visits what the statements starting inside `lines` bind (nested blocks included; blocks
/// outside `lines` are not walked), `del` targets too; tuple and list targets are split into
/// their parts.
pub(crate) fn targets_in<'a>(
    suite: &'a [Stmt],
    lines: ruff_text_size::TextRange,
    visit: &mut dyn FnMut(Bound<'a>),
) {
    fn parts<'a>(e: &'a Expr, visit: &mut dyn FnMut(Bound<'a>)) {
        match e {
            Expr::Tuple(t) => t.elts.iter().for_each(|e| parts(e, visit)),
            Expr::List(l) => l.elts.iter().for_each(|e| parts(e, visit)),
            Expr::Starred(s) => parts(&s.value, visit),
            _ => visit(Bound::Target(e)),
        }
    }
    fn go<'a>(
        suite: &'a [Stmt],
        lines: ruff_text_size::TextRange,
        depth: usize,
        visit: &mut dyn FnMut(Bound<'a>),
    ) {
        for stmt in suite {
            if stmt.end() < lines.start() || stmt.start() > lines.end() {
                continue;
            }
            if stmt.start() >= lines.start() {
                if let Stmt::Delete(s) = stmt {
                    s.targets.iter().for_each(|t| parts(t, visit));
                }
                stmt_binds(stmt, &mut |bound| match bound {
                    Bound::Target(e) => parts(e, visit),
                    Bound::Name(n) => visit(Bound::Name(n)),
                });
            }
            if depth < crate::syntax::tree::MAX_DEPTH {
                for block in crate::syntax::tree::blocks(stmt) {
                    go(block.suite, lines, depth + 1, visit);
                }
            }
        }
    }
    go(suite, lines, 0, visit);
}

/// The dotted names `suite` (its statements and their nested blocks) binds or rebinds, as
/// [`targets_in`] finds them (`self.pp_size`, `zero` of `for zero, _ in xs`, `with ... as`
/// names, `except ... as` names); an item target (`d[k] = v`, `del d[k]`) counts as its
/// container, which it changes.
pub(crate) fn bound_paths(suite: &[Stmt]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let (Some(first), Some(last)) = (suite.first(), suite.last()) else { return out };
    let lines = ruff_text_size::TextRange::new(first.start(), last.end());
    targets_in(suite, lines, &mut |bound| match bound {
        Bound::Target(Expr::Subscript(s)) => out.extend(expr::dotted(&s.value)),
        Bound::Target(e) => out.extend(expr::dotted(e)),
        Bound::Name(n) => {
            out.insert(n.to_owned());
        }
    });
    out
}

/// A binding before its scope is known: source, effective offset, start.
type Found<'a> = (Source<'a>, TextSize, TextSize);

/// `walrus`: whether the module has a `:=` at all (see [`index`]).
fn stmt_bindings<'a>(stmt: &'a Stmt, name: &str, walrus: bool, out: &mut Vec<Found<'a>>) {
    let at = stmt.start();
    let mut push = |source, effective| out.push((source, effective, at));
    match stmt {
        Stmt::Assign(s) => {
            for target in &s.targets {
                bind_target(target, Some(&s.value), name, &mut |src| push(src, s.end()));
            }
        }
        Stmt::AnnAssign(s) => {
            if let Some(value) = &s.value {
                bind_target(&s.target, Some(value), name, &mut |src| push(src, s.end()));
            }
        }
        Stmt::AugAssign(s) if is_name(&s.target, name) => {
            push(Source::Augmented(&s.value), s.end());
        }
        Stmt::For(s) => {
            loop_bindings(&s.target, &s.iter, name, &mut |src| push(src, s.target.end()));
        }
        Stmt::With(s) => {
            for item in &s.items {
                if let Some(vars) = &item.optional_vars {
                    let source = Source::WithItem(&item.context_expr);
                    bind_target(vars, None, name, &mut |_| push(source, vars.end()));
                }
            }
        }
        Stmt::Try(s) => {
            for ExceptHandler::ExceptHandler(h) in &s.handlers {
                if h.name.as_ref().is_some_and(|n| n.id.as_str() == name) {
                    out.push((Source::Caught, h.start(), h.start()));
                }
            }
        }
        Stmt::FunctionDef(s) if s.name.id.as_str() == name => push(Source::Function(s), s.end()),
        Stmt::ClassDef(s) if s.name.id.as_str() == name => push(Source::Class(s), s.end()),
        Stmt::Import(s) => {
            for alias in s.names.iter().filter(|a| alias_binds(a, name)) {
                let full = alias.name.id.as_str();
                // `import torch.distributed` binds `torch`, the package itself.
                let module = if alias.asname.is_some() {
                    full
                } else {
                    full.split('.').next().unwrap_or(full)
                };
                push(Source::Import { module, name: None, level: 0 }, s.end());
            }
        }
        Stmt::ImportFrom(s) => {
            for alias in s.names.iter().filter(|a| alias_binds(a, name)) {
                let module = s.module.as_ref().map_or("", |m| m.id.as_str());
                let name = Some(alias.name.id.as_str());
                push(Source::Import { module, name, level: s.level }, s.end());
            }
        }
        _ => {}
    }
    // Walrus targets in the statement's own expressions (`while (batch := next(it)) is not None`).
    if !walrus {
        return;
    }
    for e in header_exprs(stmt) {
        expr::walk(e, &mut |sub| {
            if let Expr::Named(n) = sub
                && is_name(&n.target, name)
            {
                out.push((Source::Value(&n.value), n.end(), at));
            }
        });
    }
}

fn alias_binds(alias: &ruff_python_ast::Alias, name: &str) -> bool {
    match &alias.asname {
        Some(as_name) => as_name.id.as_str() == name,
        // `import torch.distributed` binds `torch`.
        None => alias
            .name
            .id
            .as_str()
            .strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.')),
    }
}

fn is_name(expr: &Expr, name: &str) -> bool {
    matches!(expr, Expr::Name(n) if n.id.as_str() == name)
}

/// Binds `name` inside an assignment target; unpacking a tuple display pairs elements up.
fn bind_target<'a>(
    target: &'a Expr,
    value: Option<&'a Expr>,
    name: &str,
    push: &mut dyn FnMut(Source<'a>),
) {
    match target {
        Expr::Name(n) if n.id.as_str() == name => {
            // Without a value (`with ... as x`), the caller says what binds.
            push(Source::Value(value.unwrap_or(target)));
        }
        Expr::Tuple(_) | Expr::List(_) | Expr::Starred(_) => {
            let targets = elements(target);
            let values = value.map(elements).filter(|v| v.len() == targets.len());
            for (i, t) in targets.into_iter().enumerate() {
                if values.is_none()
                    && let Some(v) = value
                    && matches!(t, Expr::Name(n) if n.id.as_str() == name)
                {
                    // `rank, world = setup()`: element i of what the call returns.
                    push(Source::Element(v, i));
                    continue;
                }
                let v = values.as_ref().map_or(value, |vs| Some(vs[i]));
                bind_target(t, v, name, push);
            }
        }
        _ => {}
    }
}

fn elements(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::Tuple(t) => t.elts.iter().collect(),
        Expr::List(l) => l.elts.iter().collect(),
        Expr::Starred(s) => vec![&*s.value],
        _ => vec![expr],
    }
}

/// `for` targets: `enumerate`/`range` indices are counters; `zip` pairs targets with iterables.
fn loop_bindings<'a>(
    target: &'a Expr,
    iter: &'a Expr,
    name: &str,
    push: &mut dyn FnMut(Source<'a>),
) {
    let call = match iter {
        Expr::Call(c) => Some((expr::last_segment(&c.func), &c.arguments.args)),
        _ => None,
    };
    let targets = elements(target);
    let mut each = |t: &'a Expr, source: Source<'a>| {
        if mentions(t, name) {
            push(source);
        }
    };
    match call {
        Some((Some("range"), _)) => each(target, Source::LoopCounter(iter)),
        Some((Some("enumerate"), args)) if targets.len() == 2 && !args.is_empty() => {
            each(targets[0], Source::LoopCounter(&args[0]));
            each(targets[1], Source::LoopItem(&args[0]));
        }
        Some((Some("zip"), args)) if targets.len() == args.len() => {
            for (t, a) in targets.into_iter().zip(args.iter()) {
                each(t, Source::LoopItem(a));
            }
        }
        _ if targets.len() > 1 && matches!(target, Expr::Tuple(_) | Expr::List(_)) => {
            for (i, t) in targets.into_iter().enumerate() {
                each(t, Source::LoopElement(iter, i));
            }
        }
        _ => each(target, Source::LoopItem(iter)),
    }
}

/// True when `name` appears as a plain name anywhere in `target`.
pub(crate) fn mentions(target: &Expr, name: &str) -> bool {
    let mut hit = false;
    expr::walk(target, &mut |e| hit |= is_name(e, name));
    hit
}

/// What the scopes of one file bind.
impl Module {
    /// The index of the scope `suite` (a function body or the module body), built on first use.
    pub(crate) fn scope_index(&self, suite: &[Stmt]) -> Arc<ScopeIndex> {
        let Some(first) = suite.first() else { return Arc::default() };
        let key = (first.start(), suite.len());
        let mut cache =
            self.scope_cache().lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let walrus = self.has_walrus();
        let index = cache
            .entry(key)
            .or_insert_with(|| Arc::new(crate::names::bindings::index(suite, walrus)));
        Arc::clone(index)
    }

    /// What the statements starting on lines `first..=last` bind, as source text: assigned
    /// names, attributes and items (`self.rank = r` → `self.rank`, `a, b = b, a` → `a`, `b`),
    /// augmented and annotated targets, `for` and `with` targets, walrus targets, `except`
    /// names, `del` targets, `def`/`class` names and import names.
    pub fn bound_in(&self, first: u32, last: u32) -> Vec<&str> {
        let (Some(from), Some(to)) = (self.line_range(first), self.line_range(last)) else {
            return Vec::new();
        };
        let lines = TextRange::new(from.start(), to.end());
        let mut out = Vec::new();
        crate::names::bindings::targets_in(self.body(), lines, &mut |bound| {
            out.push(match bound {
                crate::names::bindings::Bound::Target(e) => self.text(e.range()),
                crate::names::bindings::Bound::Name(n) => n,
            });
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
import torch.distributed as dist
RANK = 3

def train(model, loader, steps):
    total = 0
    for i, batch in enumerate(loader):
        loss = model(batch)
        total += loss.item()
        a, b = loss, batch
        with open('f') as fh:
            pass
        try:
            pass
        except RuntimeError as err:
            pass
        while (nxt := next(it)) is not None:
            pass
    return total
";

    fn find<'a>(m: &'a Module, name: &str, line: u32) -> Option<Binding<'a>> {
        let use_at = m.line_range(line).unwrap().start();
        lookup(m, Scope::at(m, line), name, use_at)
    }

    fn kind(b: Option<Binding<'_>>) -> &'static str {
        match b.map(|b| b.source) {
            Some(Source::Value(_)) => "value",
            Some(Source::Augmented(_)) => "aug",
            Some(Source::LoopItem(_)) => "item",
            Some(Source::LoopElement(..)) => "element of item",
            Some(Source::Element(..)) => "element",
            Some(Source::LoopCounter(_)) => "counter",
            Some(Source::WithItem(_)) => "with",
            Some(Source::Caught) => "caught",
            Some(Source::Parameter) => "param",
            Some(Source::Import { .. }) => "import",
            Some(Source::Function(_)) => "function",
            Some(Source::Class(_)) => "class",
            None => "none",
        }
    }

    #[test]
    fn finds_each_binding_kind() {
        let m = Module::parse(SRC);
        assert_eq!(kind(find(&m, "i", 7)), "counter");
        assert_eq!(kind(find(&m, "batch", 7)), "item");
        assert_eq!(kind(find(&m, "loss", 8)), "value");
        assert_eq!(kind(find(&m, "total", 18)), "aug");
        assert_eq!(kind(find(&m, "total", 6)), "value");
        assert_eq!(kind(find(&m, "a", 10)), "value");
        assert_eq!(kind(find(&m, "fh", 11)), "with");
        assert_eq!(kind(find(&m, "err", 15)), "caught");
        assert_eq!(kind(find(&m, "nxt", 17)), "value");
        assert_eq!(kind(find(&m, "steps", 7)), "param");
        assert_eq!(kind(find(&m, "RANK", 7)), "value");
        assert_eq!(kind(find(&m, "dist", 7)), "import");
        assert_eq!(kind(find(&m, "nothing", 7)), "none");
    }

    #[test]
    fn loop_carried_value_falls_back_to_last_binding() {
        let m = Module::parse("def f():\n    for _ in x:\n        use(y)\n        y = g()\n");
        assert_eq!(kind(find(&m, "y", 3)), "value");
    }
}
