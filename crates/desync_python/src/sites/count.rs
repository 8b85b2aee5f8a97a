//! Counts decided at a distance. How many collectives or point-to-point messages a rank issues
//! is often a value handed to a call: a pipelining schedule's microbatch count
//! (`Schedule1F1B(stage, n_microbatches=n)`, a row of the table's `[[count_argument]]`), or the
//! trip count of a loop of the user's own whose body issues collectives (`for chunk in chunks:
//! dist.all_reduce(chunk)`, `for _ in range(n)`). When that value differs on one rank, the dumps
//! show the same calls on every rank and no stack holds the line that decided it.
//!
//! Each count is followed backwards through what only carries it along — names and their
//! assignments, loop targets into the iterable (element by element: `for step, (x, y) in
//! enumerate(data)`), parameters into every call of the function the project holds, calls of
//! the project's functions into their `return`s (a generator's `yield`s for its items),
//! `len(x)` and slices into `x`, `max(1, rows // k)` into its operands — to the first step that
//! decides a size from *values*: a boolean-mask subscript (`y[torch.isfinite(y)]`), a filtering
//! comprehension (`[c for c in xs if keep(c)]`), a value-dependent torch op (`nonzero`,
//! `unique`, `masked_select`). Such a filter keeps as many items as the rank's own values
//! pass: over rank-local data the count differs. A filter whose input the analysis shows to be
//! the same on every rank, or a walk that ends anywhere else (a configuration value, a
//! constant), claims nothing: a loop whose trip count is the same on every rank is never
//! blamed.

use std::sync::Arc;

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::Collectives;
use crate::names::bindings::{self, Scope, Source};
use crate::names::knowledge::knowledge;
use crate::syntax::module::Module;
use crate::values::Analysis;
use crate::values::resolve::{Sym, class_of, def_at};
use crate::values::value::{Eval, argument_for};

/// Steps followed at most from one count.
const MAX_STEPS: usize = 80;
/// Python builtins whose result has as many items as their argument (or the item selection
/// carries on). Torch's calls of this kind are the knowledge table's `[count_steps]`.
const SAME_ITEMS: &[&str] = &["list", "tuple", "sorted", "reversed", "iter"];

/// A count that decides how many collectives or messages a rank issues, and the line of the
/// user's code where the value was decided from the rank's own data.
#[derive(Debug, Clone)]
pub struct CountOrigin {
    /// Where the count is used: the module, its line, and what it counts.
    pub counted_module: Arc<Module>,
    pub counted_line: u32,
    /// The last line of the construct that uses the count: the loop's body ends there (a
    /// frame inside it is in the loop); the call's own line for an argument of the table.
    pub counted_last: u32,
    /// The count is a loop's trip count (else an argument of the table's `[[count_argument]]`).
    pub loop_count: bool,
    /// "`n_microbatches` of `Schedule1F1B(...)`: one forward ... per microbatch", "the trip
    /// count of `for chunk in chunks:`, whose body issues `all_reduce`".
    pub counted: String,
    /// The deciding line.
    pub module: Arc<Module>,
    pub line: u32,
    pub function: Option<String>,
    /// The line, trimmed.
    pub source: String,
    /// The expression that decides (the filter).
    pub decided_by: String,
    /// Why it differs across ranks, in words.
    pub why: String,
    /// How the count gets there, from its use outward: "`n` = len(xs) (line 12)".
    pub path: Vec<String>,
}

/// What of a value the walk wants the size of, outermost selection first: `Item` is one item
/// of iterating it, `Element(i)` element `i` of a tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Select {
    Item,
    Element(usize),
}

impl Analysis<'_> {
    /// Every count in `modules` (the user's project) that decides how many collectives or
    /// messages a rank issues and that data flow shows decided by a rank-local filter; the
    /// first found per count.
    pub fn count_origins(&self, modules: &[Arc<Module>]) -> Vec<CountOrigin> {
        let collectives = Collectives::new(self);
        let mut out = Vec::new();
        for module in modules {
            for Count { at, last, loop_count, what, count } in counts_in(self, &collectives, module)
            {
                let mut walk =
                    Walk { cx: self, modules, steps: 0, path: Vec::new(), entered: Vec::new() };
                let Some(count_expr) = expression_at(module, count) else { continue };
                if let Some(found) = walk.size(module, count_expr, &[]) {
                    out.push(CountOrigin {
                        counted_module: module.clone(),
                        counted_line: module.line_of(at),
                        counted_last: last,
                        loop_count,
                        counted: what,
                        path: walk.path,
                        ..found
                    });
                }
            }
        }
        out
    }
}

/// A count of a module, before it is followed.
struct Count {
    /// Start of the construct that uses it, and its last line.
    at: TextSize,
    last: u32,
    loop_count: bool,
    /// What it counts, in words.
    what: String,
    /// Start of the count's expression.
    count: TextSize,
}

/// The counts of `module`: a count argument of the table's rows, and the iterable (or
/// `range`'s bound) of each `for` loop whose body issues a collective.
fn counts_in(
    cx: &Analysis<'_>,
    collectives: &Collectives<'_, '_>,
    module: &Arc<Module>,
) -> Vec<Count> {
    let table = knowledge();
    let words: Vec<&str> = table.count_argument_words().collect();
    let mut out = Vec::new();
    if words.iter().any(|w| module.source().contains(w)) {
        for line in 1..=module.line_count() {
            for c in module.calls_at(line) {
                if module.line_of(c.start()) != line {
                    continue;
                }
                let callee = module.text(c.func.range());
                if !words.iter().any(|w| callee.ends_with(w)) {
                    continue;
                }
                let Some(name) = cx.qualified_name(module, line, callee) else { continue };
                let Some(row) = table.count_argument(&table.canonical(&name)) else { continue };
                let keyword = c.arguments.keywords.iter().find_map(|k| {
                    (k.arg.as_ref().is_some_and(|a| a.id.as_str() == row.keyword))
                        .then_some(&k.value)
                });
                let Some(arg) =
                    keyword.or_else(|| row.position.and_then(|p| c.arguments.args.get(p)))
                else {
                    continue;
                };
                let what = format!(
                    "`{}` of `{}` ({}:{}): {}",
                    row.keyword,
                    crate::syntax::expr::snippet(module.text(c.range())),
                    file_name(module),
                    line,
                    row.issues
                );
                out.push(Count {
                    at: c.start(),
                    last: line,
                    loop_count: false,
                    what,
                    count: arg.start(),
                });
            }
        }
    }
    let sites = collectives.sites(module);
    crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
        let Stmt::For(f) = stmt else { return };
        let (first, last) = crate::syntax::tree::lines_of(module, f);
        let Some(site) = sites.iter().find(|s| s.line > first && s.line <= last) else { return };
        let count = match &*f.iter {
            Expr::Call(c)
                if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "range")
                    && let Some(bound) = c.arguments.args.last() =>
            {
                bound
            }
            iter => iter,
        };
        let what = format!(
            "the trip count of `for {} in {}:` ({}:{}), whose body issues {} (line {})",
            module.text(f.target.range()),
            module.text(f.iter.range()),
            file_name(module),
            first,
            site.ops.join(", "),
            site.line
        );
        out.push(Count { at: f.start(), last, loop_count: true, what, count: count.start() });
    });
    out
}

struct Walk<'c, 'p, 'm> {
    cx: &'c Analysis<'p>,
    modules: &'m [Arc<Module>],
    steps: usize,
    path: Vec<String>,
    /// Functions the walk entered through a call it followed: (module, `def` start) -> the
    /// caller's module and call start. A parameter there is what that call passed.
    entered: Vec<Entered>,
}

/// A function the walk entered: its module and `def` start, the caller's module and call
/// start, and whether the call went through an instance (the receiver is bound).
type Entered = (Arc<Module>, TextSize, Arc<Module>, TextSize, bool);

impl Walk<'_, '_, '_> {
    /// Where the size of `e` (after `select`) was decided by a rank-local filter.
    fn size(&mut self, module: &Arc<Module>, e: &Expr, select: &[Select]) -> Option<CountOrigin> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return None;
        }
        match e {
            Expr::Name(n) => self.name(module, n.id.as_str(), e.start(), select),
            Expr::Tuple(t) if !select.is_empty() => match select[0] {
                Select::Element(i) => self.size(module, t.elts.get(i)?, &select[1..]),
                Select::Item => None,
            },
            Expr::Call(c) => self.call(module, c, select),
            Expr::Subscript(s) if select.is_empty() => {
                if let Expr::Slice(slice) = &*s.slice {
                    // A slice holds at most what it cuts from: the value's size decides first,
                    // then the bounds.
                    return self.size(module, &s.value, &[]).or_else(|| {
                        [&slice.lower, &slice.upper]
                            .into_iter()
                            .flatten()
                            .find_map(|b| self.size(module, b, &[]))
                    });
                }
                if is_mask(self, module, &s.slice) {
                    return self.filter(module, e, &s.value, "keeps the items whose mask holds");
                }
                None
            }
            Expr::BinOp(b) if select.is_empty() => {
                self.size(module, &b.left, &[]).or_else(|| self.size(module, &b.right, &[]))
            }
            Expr::ListComp(comp) if select.is_empty() => {
                let generator = comp.generators.first()?;
                if comp.generators.iter().any(|g| !g.ifs.is_empty()) {
                    return self.filter(
                        module,
                        e,
                        &generator.iter,
                        "keeps the items its `if` passes",
                    );
                }
                self.size(module, &generator.iter, &[])
            }
            // An attribute, a constant, anything else: nothing shown decides from values.
            _ => None,
        }
    }

    /// A filter reached: its result's size is decided by the values of `input`. Claimed only
    /// when nothing shows `input` to be the same on every rank.
    fn filter(
        &mut self,
        module: &Arc<Module>,
        e: &Expr,
        input: &Expr,
        how: &str,
    ) -> Option<CountOrigin> {
        let at = e.start();
        let line = module.line_of(at);
        let scope = Scope::at(module, line);
        let deps = Eval::new(self.cx, module, scope, 0).value(input, at).whole;
        let reasons: Vec<String> = deps
            .to_public()
            .into_iter()
            .map(|d| format!("{}: {}", d.kind.as_str(), d.evidence))
            .collect();
        // Nothing that can differ reaches the input (a constant list, the model's parameters
        // as every rank builds them): as many items pass on every rank.
        if reasons.is_empty() && deps.params.is_empty() {
            return None;
        }
        let why = if reasons.is_empty() {
            format!(
                "it {how}: how many is decided by the values of `{}` this rank was given ({}), its own data",
                module.text(input.range()),
                deps.params.join(", ")
            )
        } else {
            format!(
                "it {how}: how many is decided by `{}` ({})",
                module.text(input.range()),
                reasons.join("; ")
            )
        };
        Some(CountOrigin {
            counted_module: module.clone(),
            counted_line: 0,
            counted_last: 0,
            loop_count: false,
            counted: String::new(),
            module: module.clone(),
            line,
            function: module.function_at(line).map(|f| f.name),
            source: module.line_text(line).unwrap_or("").trim().to_owned(),
            decided_by: module.text(e.range()).to_owned(),
            why,
            path: Vec::new(),
        })
    }

    fn name(
        &mut self,
        module: &Arc<Module>,
        name: &str,
        at: TextSize,
        select: &[Select],
    ) -> Option<CountOrigin> {
        let line = module.line_of(at);
        let scope = Scope::at(module, line);
        let binding = bindings::lookup(module, scope, name, at)?;
        let hop = |what: &str| {
            format!(
                "`{name}` = {} ({}:{})",
                crate::syntax::expr::snippet(what),
                file_name(module),
                module.line_of(binding.at)
            )
        };
        match binding.source {
            Source::Value(v) => {
                self.path.push(hop(module.text(v.range())));
                self.followed(|w| w.size(module, v, select))
            }
            Source::Element(v, i) => {
                self.path.push(hop(module.text(v.range())));
                let mut inner = vec![Select::Element(i)];
                inner.extend_from_slice(select);
                self.followed(|w| w.size(module, v, &inner))
            }
            Source::LoopItem(_) | Source::LoopElement(..) => {
                let (iter, target) = loop_at(module, binding.at)?;
                let mut inner = vec![Select::Item];
                inner.extend(element_path(target, name)?.into_iter().map(Select::Element));
                inner.extend_from_slice(select);
                self.path.push(format!(
                    "`{name}` from `for {} in {}` ({}:{})",
                    module.text(target.range()),
                    crate::syntax::expr::snippet(module.text(iter.range())),
                    file_name(module),
                    module.line_of(binding.at)
                ));
                self.followed(|w| w.size(module, iter, &inner))
            }
            Source::Parameter => self.parameter(module, name, at, select),
            _ => None,
        }
    }

    /// Runs `f`; drops the hop it was given when it finds nothing.
    fn followed(
        &mut self,
        f: impl FnOnce(&mut Self) -> Option<CountOrigin>,
    ) -> Option<CountOrigin> {
        let found = f(self);
        if found.is_none() {
            self.path.pop();
        }
        found
    }

    /// A parameter: what the call the walk came through passed, else every call of the
    /// function the project holds.
    fn parameter(
        &mut self,
        module: &Arc<Module>,
        name: &str,
        at: TextSize,
        select: &[Select],
    ) -> Option<CountOrigin> {
        let line = module.line_of(at);
        let def = module.path(line).and_then(|p| p.innermost_function(module))?;
        let def_start = def.start();
        let function = def.name.id.to_string();
        let parameters: Vec<String> = def
            .parameters
            .iter_non_variadic_params()
            .map(|p| p.parameter.name.id.to_string())
            .collect();
        let entered = self
            .entered
            .iter()
            .rev()
            .find(|(m, d, ..)| Arc::ptr_eq(m, module) && *d == def_start)
            .cloned();
        if let Some((_, _, outer, call_at, is_method)) = entered {
            let call = crate::syntax::tree::call_starting_at(outer.body(), call_at)?;
            let arg = argument_for(&parameters, is_method, call, name)?;
            self.path.push(format!(
                "`{name}`, a parameter of `{function}` = {} ({}:{})",
                crate::syntax::expr::snippet(outer.text(arg.range())),
                file_name(&outer),
                outer.line_of(arg.start())
            ));
            return self.followed(|w| w.size(&outer, arg, select));
        }
        let callers = self.callers(module, def, name);
        for (outer, arg_at) in callers {
            let Some(arg) = expression_at(&outer, arg_at) else { continue };
            self.path.push(format!(
                "`{name}`, a parameter of `{function}` = {} ({}:{})",
                crate::syntax::expr::snippet(outer.text(arg.range())),
                file_name(&outer),
                outer.line_of(arg_at)
            ));
            if let Some(found) = self.followed(|w| w.size(&outer, arg, select)) {
                return Some(found);
            }
        }
        None
    }

    /// The calls of `def` (in `module`) across the project's modules that pass `parameter`:
    /// each call spelling the function's name (an attribute for a method) that fits its
    /// parameters and that the analysis does not resolve to another function; the
    /// function's calls of itself are not its callers. The module and the argument's start.
    fn callers(
        &self,
        module: &Arc<Module>,
        def: &StmtFunctionDef,
        parameter: &str,
    ) -> Vec<(Arc<Module>, TextSize)> {
        let name = def.name.id.as_str();
        let is_method = class_of(module, def).is_some();
        let parameters: Vec<String> = def
            .parameters
            .iter_non_variadic_params()
            .map(|p| p.parameter.name.id.to_string())
            .collect();
        let own = def.range();
        let mut out = Vec::new();
        for other in self.modules {
            if !other.source().contains(name) {
                continue;
            }
            for line in 1..=other.line_count() {
                for c in other.calls_at(line) {
                    let spelled = match &*c.func {
                        Expr::Attribute(a) => a.attr.id.as_str() == name,
                        Expr::Name(n) => !is_method && n.id.as_str() == name,
                        _ => false,
                    };
                    if !spelled || (Arc::ptr_eq(other, module) && own.contains(c.start())) {
                        continue;
                    }
                    let scope = Scope::at(other, line);
                    if let Sym::Function(f) =
                        Eval::new(self.cx, other, scope, 0).resolve(&c.func, c.start())
                    {
                        let home = f.module.clone().unwrap_or_else(|| other.clone());
                        if f.def != def.start() || !same_module(&home, module) {
                            continue;
                        }
                    } else if is_method && !accepts(def, c) {
                        continue;
                    }
                    let through_instance = is_method && matches!(&*c.func, Expr::Attribute(_));
                    if let Some(arg) = argument_for(&parameters, through_instance, c, parameter) {
                        out.push((other.clone(), arg.start()));
                    }
                }
            }
        }
        out
    }

    fn call(
        &mut self,
        module: &Arc<Module>,
        c: &ExprCall,
        select: &[Select],
    ) -> Option<CountOrigin> {
        let at = c.start();
        let line = module.line_of(at);
        let args = &c.arguments.args;
        if let Expr::Name(n) = &*c.func
            && bindings::lookup(module, Scope::at(module, line), n.id.as_str(), at).is_none()
        {
            match (n.id.as_str(), select) {
                ("max" | "min" | "range", []) => {
                    return args.iter().find_map(|a| self.size(module, a, &[]));
                }
                ("len" | "enumerate", []) => return self.size(module, args.first()?, &[]),
                ("enumerate", [Select::Item, Select::Element(1), rest @ ..]) => {
                    let mut inner = vec![Select::Item];
                    inner.extend_from_slice(rest);
                    return self.size(module, args.first()?, &inner);
                }
                (name, _) if SAME_ITEMS.contains(&name) => {
                    return self.size(module, args.first()?, select);
                }
                _ => {}
            }
        }
        let steps = &knowledge().count_steps;
        let scope = Scope::at(module, line);
        match Eval::new(self.cx, module, scope, 0).resolve(&c.func, at) {
            Sym::Function(f) => {
                let home = f.module.clone().unwrap_or_else(|| module.clone());
                return self.project_call(module, c, &home, f.def, f.is_method, select);
            }
            Sym::Path(p) if select.is_empty() && steps.value_sized.contains(&p) => {
                return self.filter(
                    module,
                    &Expr::Call(c.clone()),
                    args.first()?,
                    "keeps the values its input holds",
                );
            }
            Sym::Path(p)
                if steps.splits.contains(&p)
                    && select.first().is_none_or(|s| *s == Select::Item) =>
            {
                return self.size(module, args.first()?, &[]);
            }
            Sym::Unknown => {}
            _ => return None,
        }
        let Expr::Attribute(m) = &*c.func else { return None };
        let method = m.attr.id.as_str();
        if select.is_empty() && steps.value_sized_methods.contains(method) {
            return self.filter(
                module,
                &Expr::Call(c.clone()),
                &m.value,
                "keeps the values its input holds",
            );
        }
        if select.is_empty() && steps.size_reads_methods.contains(method) {
            return self.size(module, &m.value, &[]);
        }
        if select.is_empty() && steps.split_methods.contains(method) {
            return self.size(module, &m.value, &[]);
        }
        if steps.keeps_items_methods.contains(method) {
            return self.size(module, &m.value, select);
        }
        // A method of an object nothing in view types (`pool.microbatches(n)`, `pool` a
        // parameter): the project's only method of that name, taking these arguments.
        let (home, def) = self.only_method(method, c)?;
        self.project_call(module, c, &home, def, true, select)
    }

    /// The project's one method named `name` that `c` can call.
    fn only_method(&self, name: &str, c: &ExprCall) -> Option<(Arc<Module>, TextSize)> {
        let mut found = None;
        for module in self.modules {
            let mut hits = Vec::new();
            crate::syntax::tree::walk_all(module.body(), &mut |s| {
                if let Stmt::FunctionDef(d) = s
                    && d.name.id.as_str() == name
                    && class_of(module, d).is_some()
                {
                    hits.push(d.start());
                }
            });
            for d in hits {
                let def = def_at(module, d)?;
                if !accepts(def, c) {
                    continue;
                }
                if found.is_some() {
                    return None;
                }
                found = Some((module.clone(), d));
            }
        }
        found
    }

    /// A call of a project function: its `return`s (a generator's `yield`s for its items),
    /// its parameters being what `c` passes.
    fn project_call(
        &mut self,
        module: &Arc<Module>,
        c: &ExprCall,
        home: &Arc<Module>,
        def_start: TextSize,
        is_method: bool,
        select: &[Select],
    ) -> Option<CountOrigin> {
        let def = def_at(home, def_start)?;
        if self.entered.iter().any(|(m, d, ..)| Arc::ptr_eq(m, home) && *d == def_start) {
            return None;
        }
        let through_instance = is_method && matches!(&*c.func, Expr::Attribute(_));
        self.entered.push((home.clone(), def_start, module.clone(), c.start(), through_instance));
        let generator = matches!(select.first(), Some(Select::Item)) && yields(def);
        let (values, rest) =
            if generator { (yielded(def), &select[1..]) } else { (returned(def), select) };
        let mut found = None;
        for v in values {
            self.path.push(format!(
                "`{}` {} {} ({}:{})",
                def.name.id,
                if generator { "yields" } else { "returns" },
                crate::syntax::expr::snippet(home.text(v.range())),
                file_name(home),
                home.line_of(v.start())
            ));
            found = self.followed(|w| w.size(home, v, rest));
            if found.is_some() {
                break;
            }
        }
        self.entered.pop();
        found
    }
}

/// Whether `e`, a subscript's index, is a boolean mask: a comparison, a negation, a
/// combination of masks, a call of a torch predicate, or a name bound to one.
fn is_mask(walk: &Walk<'_, '_, '_>, module: &Module, e: &Expr) -> bool {
    match e {
        Expr::Compare(_) | Expr::BoolOp(_) => true,
        Expr::UnaryOp(u) => {
            matches!(u.op, ruff_python_ast::UnaryOp::Not | ruff_python_ast::UnaryOp::Invert)
        }
        Expr::BinOp(b) => {
            matches!(b.op, ruff_python_ast::Operator::BitAnd | ruff_python_ast::Operator::BitOr)
                && (is_mask(walk, module, &b.left) || is_mask(walk, module, &b.right))
        }
        Expr::Call(c) => {
            let line = module.line_of(c.start());
            let name = walk.cx.qualified_name(module, line, module.text(c.func.range()));
            let last = crate::syntax::expr::last_segment(&c.func).unwrap_or("");
            name.is_some_and(|n| n.starts_with("torch."))
                && (last.starts_with("is")
                    || last.starts_with("logical_")
                    || ["eq", "ne", "gt", "ge", "lt", "le"].contains(&last))
        }
        Expr::Name(n) => {
            let scope = Scope::at(module, module.line_of(n.start()));
            match bindings::lookup(module, scope, n.id.as_str(), n.start()).map(|b| b.source) {
                Some(Source::Value(v)) => !matches!(v, Expr::Name(_)) && is_mask(walk, module, v),
                _ => false,
            }
        }
        _ => false,
    }
}

/// The `for` statement starting at `at` in `module`: its iterable and target.
fn loop_at(module: &Module, at: TextSize) -> Option<(&Expr, &Expr)> {
    let mut found = None;
    crate::syntax::tree::walk_all(module.body(), &mut |s| {
        if let Stmt::For(f) = s
            && f.start() == at
        {
            found = Some((&*f.iter, &*f.target));
        }
    });
    found
}

/// The element indices that lead to `name` in a loop target (`step, (x, y)`: `y` is [1, 1]).
fn element_path(target: &Expr, name: &str) -> Option<Vec<usize>> {
    match target {
        Expr::Name(n) => (n.id.as_str() == name).then(Vec::new),
        Expr::Tuple(t) => t.elts.iter().enumerate().find_map(|(i, e)| {
            let mut rest = element_path(e, name)?;
            rest.insert(0, i);
            Some(rest)
        }),
        Expr::List(l) => l.elts.iter().enumerate().find_map(|(i, e)| {
            let mut rest = element_path(e, name)?;
            rest.insert(0, i);
            Some(rest)
        }),
        _ => None,
    }
}

/// Whether a call `c` fits a method `def` (its receiver bound).
fn accepts(def: &StmtFunctionDef, c: &ExprCall) -> bool {
    let positional = def.parameters.posonlyargs.len() + def.parameters.args.len();
    let required = def
        .parameters
        .posonlyargs
        .iter()
        .chain(&def.parameters.args)
        .filter(|p| p.default.is_none())
        .count();
    let given = c.arguments.args.len() + 1;
    def.parameters.vararg.is_some()
        || (given <= positional && given + c.arguments.keywords.len() >= required)
}

fn yields(def: &StmtFunctionDef) -> bool {
    !yielded(def).is_empty()
}

/// The values `def`'s own body yields (not its nested functions').
fn yielded(def: &StmtFunctionDef) -> Vec<&Expr> {
    let mut out = Vec::new();
    crate::syntax::tree::walk_scope(&def.body, &mut |s, _| {
        if let Stmt::Expr(e) = s
            && let Expr::Yield(y) = &*e.value
            && let Some(v) = y.value.as_deref()
        {
            out.push(v);
        }
    });
    out
}

fn returned(def: &StmtFunctionDef) -> Vec<&Expr> {
    let mut out = Vec::new();
    crate::syntax::tree::walk_scope(&def.body, &mut |s, _| {
        if let Stmt::Return(r) = s
            && let Some(v) = r.value.as_deref()
        {
            out.push(v);
        }
    });
    out
}

/// The expression starting at `at` in `module` (a call's argument).
fn expression_at(module: &Module, at: TextSize) -> Option<&Expr> {
    let line = module.line_of(at);
    for c in calls_near(module, line) {
        if let Some(e) = c
            .arguments
            .args
            .iter()
            .chain(c.arguments.keywords.iter().map(|k| &k.value))
            .find(|a| a.start() == at)
        {
            return Some(e);
        }
    }
    let mut found = None;
    crate::syntax::tree::walk_all(module.body(), &mut |s| {
        if let Stmt::For(f) = s {
            if f.iter.start() == at {
                found = Some(&*f.iter);
            } else if let Expr::Call(c) = &*f.iter
                && let Some(a) = c.arguments.args.iter().find(|a| a.start() == at)
            {
                found = Some(a);
            }
        }
    });
    found
}

fn same_module(a: &Arc<Module>, b: &Arc<Module>) -> bool {
    Arc::ptr_eq(a, b)
        || a.file_path().zip(b.file_path()).is_some_and(|(x, y)| {
            x == y || x.canonicalize().ok().zip(y.canonicalize().ok()).is_some_and(|(x, y)| x == y)
        })
}

/// The calls that start on `line` or on one of the few lines before it (an argument on a
/// continuation line of a call).
fn calls_near(module: &Module, line: u32) -> Vec<&ExprCall> {
    (line.saturating_sub(8).max(1)..=line).rev().flat_map(|l| module.calls_at(l)).collect()
}

fn file_name(module: &Module) -> String {
    module
        .file_path()
        .and_then(|p| p.file_name())
        .map_or_else(|| "<module>".to_owned(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::project::{FileProject, Project};

    fn project(tag: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("desync-count-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    const SYNC: &str = "\
import torch.distributed as dist

def sync_all(rows, steps):
    for row in rows:
        dist.all_reduce(row)
    for _ in range(steps):
        dist.barrier()
";

    /// Gradient-accumulation shape: the rows a rank syncs are the ones its own `if` keeps,
    /// in another module, passed through a helper; the `range(steps)` loop beside it has a
    /// configured trip count and is not claimed.
    #[test]
    fn a_loop_count_is_followed_to_a_filtering_comprehension_two_modules_away() {
        let data = "\
def usable(batch):
    kept = [r for r in batch if r.sum() > 0]
    return kept
";
        let main = "\
from data import usable
from sync import sync_all

STEPS = 3

def run(batch):
    rows = usable(batch)
    sync_all(rows, STEPS)
";
        let dir = project("comp", &[("sync.py", SYNC), ("data.py", data), ("train.py", main)]);
        let files = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&files));
        let modules: Vec<Arc<Module>> = ["sync.py", "data.py", "train.py"]
            .iter()
            .map(|f| files.load(&dir.join(f)).unwrap())
            .collect();
        let found = cx.count_origins(&modules);
        assert_eq!(found.len(), 1, "{found:?}");
        let origin = &found[0];
        assert_eq!(origin.module.file_path(), Some(dir.join("data.py").as_path()));
        assert_eq!(origin.line, 2);
        assert!(origin.loop_count);
        assert!(
            origin.path.iter().any(|h| h.contains("`rows`, a parameter of `sync_all`")),
            "{:?}",
            origin.path
        );
        assert!(origin.path.iter().any(|h| h.contains("`usable` returns")), "{:?}", origin.path);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A filter over a constant list keeps as many items on every rank: nothing is claimed.
    #[test]
    fn a_filter_over_the_same_items_everywhere_is_not_claimed() {
        let main = "\
from sync import sync_all

NAMES = [1, 2, 3]

def run():
    sync_all([n for n in NAMES if n > 1], 2)
";
        let dir = project("const", &[("sync.py", SYNC), ("train.py", main)]);
        let files = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&files));
        let modules: Vec<Arc<Module>> =
            ["sync.py", "train.py"].iter().map(|f| files.load(&dir.join(f)).unwrap()).collect();
        assert!(cx.count_origins(&modules).is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
