//! The evaluator: what an expression's value depends on, one rule per kind of expression.
//! Names are followed to their bindings ([`bindings`]); calls are resolved to qualified names
//! ([`super::resolve`]) and looked up in the knowledge table, or summarised when they are the
//! project's own functions ([`super::summary`]).

mod attributes;
mod calls;
mod classes;
mod consensus;
mod decisions;
mod follow;

use ruff_python_ast::{CmpOp, Comprehension, Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::resolve::{ClassRef, FnRef, Sym};
use super::{Analysis, Deps, MAX_HOPS, Value, key_of, node_text, quote, via};
use crate::names::bindings::{self, Binding, Scope, Source};
use crate::names::knowledge::{Agrees, RANK_ENV_VARS, Role, UNIFORM_ENV_VARS, knowledge};
use crate::syntax::expr::children;
use crate::syntax::module::Module;
use crate::syntax::tree::{MAX_DEPTH, Slot};
use crate::syntax::types::DependenceKind::{
    Environment, Exception, LocalData, Randomness, RankId, Time,
};

/// Builtins whose result depends on their arguments only.
const BUILTINS: &[&str] = &[
    "len",
    "range",
    "int",
    "float",
    "bool",
    "str",
    "abs",
    "min",
    "max",
    "sum",
    "round",
    "list",
    "tuple",
    "dict",
    "set",
    "frozenset",
    "sorted",
    "reversed",
    "enumerate",
    "zip",
    "map",
    "filter",
    "isinstance",
    "issubclass",
    "divmod",
    "pow",
    "any",
    "all",
    "iter",
    "next",
    "repr",
    "format",
    "hash",
    "getattr",
    "hasattr",
    "type",
    "id",
    "print",
    "vars",
    "slice",
    "bytes",
    "object",
    "super",
    "callable",
    "chr",
    "ord",
    "hex",
    "oct",
    "bin",
    "complex",
    "None",
    "True",
    "False",
    "NotImplemented",
    "Ellipsis",
    "__name__",
    "__file__",
    "ValueError",
    "RuntimeError",
    "TypeError",
    "KeyError",
    "Exception",
    "StopIteration",
    "property",
    "staticmethod",
    "classmethod",
];

/// Methods that move a tensor or module between devices (`torch.Tensor.to`, `nn.Module.to`,
/// `.cuda`): where a value lives is not what it is. Only a dtype argument changes it.
pub(crate) const PLACEMENT_METHODS: &[&str] =
    &["to", "cuda", "cpu", "xpu", "npu", "mps", "pin_memory"];

/// Keyword arguments that only place a value on a device (`device_ids=[local_rank]` of DDP,
/// `map_location=` of `torch.load`).
const DEVICE_KEYWORDS: &[&str] =
    &["device", "device_ids", "output_device", "map_location", "non_blocking", "memory_format"];

/// An index written out (`x[0]`, `d["step"]`, `x[-1]`): the same item on every rank.
fn is_literal_key(index: &Expr) -> bool {
    match index {
        Expr::StringLiteral(_) | Expr::NumberLiteral(_) | Expr::NoneLiteral(_) => true,
        Expr::UnaryOp(u) => is_literal_key(&u.operand),
        Expr::Tuple(t) => t.elts.iter().all(|e| is_literal_key(e) || matches!(e, Expr::Slice(_))),
        _ => false,
    }
}

/// `kwargs["device"]`: an item under a key that is one of [`DEVICE_KEYWORDS`].
fn places_on_device(target: &Expr) -> bool {
    matches!(target, Expr::Subscript(s)
        if matches!(&*s.slice, Expr::StringLiteral(k) if DEVICE_KEYWORDS.contains(&k.value.to_str())))
}

/// How many of the calls that pass a name between its binding and a use are asked whether
/// they agree it ([`Eval::agreed_between`]).
const MAX_AGREEING_CALLS: usize = 64;

/// How many assignments and calls a value's origin is followed through (a process group to
/// the table's group row, a saved setting to the reader that gave it).
const MAX_ORIGIN_HOPS: usize = 4;

/// How many names, calls and returns [`Eval::shown_not_none`] follows.
const MAX_NOT_NONE_DEPTH: usize = 6;

/// Whether a placement argument names a device: a string (`"cuda:0"`), `torch.device(...)`, or
/// an index that depends on nothing but the rank (the local rank is the device index).
fn is_device(arg: &Expr, deps: &Deps) -> bool {
    match arg {
        Expr::StringLiteral(_) | Expr::FString(_) => true,
        Expr::Call(c) if crate::syntax::expr::last_segment(&c.func) == Some("device") => true,
        _ => !deps.reasons.is_empty() && deps.reasons.iter().all(|r| r.kind == RankId),
    }
}

pub(crate) struct Eval<'a, 'm> {
    pub(crate) cx: &'a Analysis<'a>,
    pub(crate) module: &'m Module,
    pub(crate) scope: Scope<'m>,
    /// Calls summarised around this evaluation.
    pub(crate) call_depth: usize,
    /// Bindings being followed (cycle guard and depth limit).
    pub(crate) tracing: Vec<TextSize>,
    /// Names bound by the comprehensions around the expression, with their items' dependence.
    shadow: Vec<(String, Value)>,
    /// The text of an expression parsed on its own (not part of the module), while it is the
    /// one being evaluated.
    pub(crate) foreign: Option<String>,
}

impl<'a, 'm> Eval<'a, 'm> {
    pub(crate) fn new(
        cx: &'a Analysis<'a>,
        module: &'m Module,
        scope: Scope<'m>,
        call_depth: usize,
    ) -> Self {
        Eval {
            cx,
            module,
            scope,
            call_depth,
            tracing: Vec::new(),
            shadow: Vec::new(),
            foreign: None,
        }
    }

    pub(crate) fn text(&self, node: &impl Ranged) -> &str {
        node_text(self.module, self.foreign.as_deref(), node.range())
    }

    pub(crate) fn quoted(&self, node: &impl Ranged) -> String {
        quote(self.text(node))
    }

    pub(crate) fn line_of(&self, at: TextSize) -> u32 {
        self.module.line_of(at)
    }

    pub(crate) fn value(&mut self, e: &Expr, at: TextSize) -> Value {
        self.value_at(e, at, 0)
    }

    fn value_at(&mut self, e: &Expr, at: TextSize, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::default();
        }
        match e {
            Expr::Name(n) => self.name(n.id.as_str(), at),
            Expr::Attribute(_) => Value::of(self.attribute(e, at, depth)),
            Expr::Subscript(s) => self.subscript(e, s, at, depth),
            Expr::Call(c) => self.call(e, c, at, depth),
            Expr::Tuple(t) => {
                let elements: Vec<Deps> =
                    t.elts.iter().map(|x| self.value_at(x, at, depth + 1).whole).collect();
                let mut whole = Deps::default();
                for x in &elements {
                    whole.merge(x.clone());
                }
                Value { whole, elements: Some(elements), fields: None }
            }
            Expr::ListComp(c) => Value::of(self.comprehension(&c.generators, &[&c.elt], at, depth)),
            Expr::SetComp(c) => Value::of(self.comprehension(&c.generators, &[&c.elt], at, depth)),
            Expr::Generator(c) => {
                Value::of(self.comprehension(&c.generators, &[&c.elt], at, depth))
            }
            Expr::DictComp(c) => {
                let mut parts: Vec<&Expr> = vec![&c.value];
                parts.extend(c.key.as_deref());
                Value::of(self.comprehension(&c.generators, &parts, at, depth))
            }
            Expr::Dict(d) => match keyed_entries(d) {
                Some(entries) => self.entries(&entries, at, depth),
                None => self.parts(e, at, depth),
            },
            // `RANK == -1`, `world_size > 1`: whether the run has peers, alike on every rank.
            Expr::Compare(_) if self.single_process_atom(e).is_some() => Value::default(),
            // A lambda's body runs later, elsewhere.
            Expr::Lambda(_) => Value::default(),
            // The test chooses which value it is.
            Expr::If(x) => {
                let mut out = self.value_at(&x.body, at, depth + 1);
                out.merge(self.value_at(&x.orelse, at, depth + 1));
                out.whole.merge(self.value_at(&x.test, at, depth + 1).whole.through(via::CHOICE));
                out
            }
            _ => self.parts(e, at, depth),
        }
    }

    /// Any other expression: what its parts depend on, merged.
    fn parts(&mut self, e: &Expr, at: TextSize, depth: usize) -> Value {
        let mut out = Value::default();
        for child in children(e) {
            out.whole.merge(self.value_at(child, at, depth + 1).whole);
        }
        out
    }

    /// A dict written out with a string for every key, entry by entry (see [`entry_field`]).
    fn entries(&mut self, entries: &[(&str, &Expr)], at: TextSize, depth: usize) -> Value {
        let mut whole = Deps::default();
        let mut fields = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let v = self.value_at(value, at, depth + 1).whole;
            whole.merge(v.clone());
            fields.push((entry_field(key), v));
        }
        Value { whole, elements: None, fields: Some(fields) }
    }

    /// Comprehension: the element depends on the items of what it iterates and its filters.
    fn comprehension(
        &mut self,
        generators: &[Comprehension],
        elements: &[&Expr],
        at: TextSize,
        depth: usize,
    ) -> Deps {
        let before = self.shadow.len();
        let mut out = Deps::default();
        for g in generators {
            let items = self.value_at(&g.iter, at, depth + 1);
            out.merge(self.length(&g.iter, at));
            let mut names = Vec::new();
            crate::syntax::expr::walk(&g.target, &mut |x| {
                if let Expr::Name(n) = x {
                    names.push(n.id.to_string());
                }
            });
            for name in names {
                self.shadow.push((name, items.clone()));
            }
            for cond in &g.ifs {
                out.merge(self.value_at(cond, at, depth + 1).whole);
            }
        }
        for e in elements {
            out.merge(self.value_at(e, at, depth + 1).whole);
        }
        self.shadow.truncate(before);
        out
    }
}

/// What reading the environment variable `name` depends on (see [`Eval::environ`]).
fn environ_variable(name: &str, origin: String) -> Deps {
    if RANK_ENV_VARS.contains(&name) {
        Deps::reason(RankId, origin)
    } else if UNIFORM_ENV_VARS.contains(&name) {
        Deps::default()
    } else {
        Deps::reason(Environment, origin)
    }
}

/// The argument a call passes for parameter `param` of a function with `parameters` (`self`
/// first for a method called through an instance).
pub(crate) fn argument_for<'c>(
    parameters: &[String],
    is_method: bool,
    c: &'c ExprCall,
    param: &str,
) -> Option<&'c Expr> {
    if let Some(kw) =
        c.arguments.keywords.iter().find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == param))
    {
        return Some(&kw.value);
    }
    let index = parameters.iter().position(|p| p == param)?;
    let index = if is_method { index.checked_sub(1)? } else { index };
    let arg = c.arguments.args.get(index)?;
    (!matches!(arg, Expr::Starred(_))).then_some(arg)
}

/// The names a class's constructor fills, in order: `__init__`'s parameters after `self`, or
/// the annotated class-level names of a dataclass.
fn field_names(class: &ruff_python_ast::StmtClassDef) -> Vec<String> {
    for stmt in &class.body {
        if let Stmt::FunctionDef(init) = stmt
            && init.name.id.as_str() == "__init__"
        {
            return init
                .parameters
                .iter_non_variadic_params()
                .skip(1)
                .map(|p| p.parameter.name.id.to_string())
                .collect();
        }
    }
    class
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::AnnAssign(a) => match &*a.target {
                Expr::Name(n) => Some(n.id.to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// torch's in-place convention (`x.fill_(1)`, `x.copy_(y)`): the value itself changes, as
/// an assignment would change it, where a container's mutators change one of its parts.
/// `[]`, `{}`, `list()`, `dict()`, `set()`: a container with nothing in it yet.
fn is_empty_container(e: &Expr) -> bool {
    match e {
        Expr::List(l) => l.elts.is_empty(),
        Expr::Dict(d) => d.is_empty(),
        Expr::Call(c) => {
            c.arguments.is_empty()
                && matches!(&*c.func, Expr::Name(n) if matches!(n.id.as_str(), "list" | "dict" | "set"))
        }
        _ => false,
    }
}

/// Whether the call takes `name` itself as an argument (positional or keyword).
fn passes_bare(c: &ExprCall, name: &str) -> bool {
    c.arguments
        .args
        .iter()
        .chain(c.arguments.keywords.iter().map(|k| &k.value))
        .any(|a| matches!(a, Expr::Name(n) if n.id.as_str() == name))
}

/// What a call is given besides `name`: its receiver (`schedule` of `schedule.step(...)`) and
/// its other arguments.
fn inputs_besides<'m>(c: &'m ExprCall, name: &str) -> Vec<&'m Expr> {
    let receiver = match &*c.func {
        Expr::Attribute(m) => Some(&*m.value),
        _ => None,
    };
    receiver
        .into_iter()
        .chain(c.arguments.args.iter())
        .chain(c.arguments.keywords.iter().map(|k| &k.value))
        .filter(|a| !matches!(a, Expr::Name(n) if n.id.as_str() == name))
        .collect()
}

fn is_tensor_in_place(method: &str) -> bool {
    method.ends_with('_') && !method.starts_with('_')
}

/// `x[...]` or `x.attr` (any depth) as an assignment target rooted at `name`.
fn writes_into(target: &Expr, name: &str) -> bool {
    matches!(target, Expr::Subscript(_) | Expr::Attribute(_))
        && crate::syntax::expr::root_name(target) == Some(name)
}

/// Methods that change their receiver: torch's in-place convention (a trailing underscore)
/// and the mutators of Python's list, dict and set.
fn is_in_place(method: &str) -> bool {
    is_tensor_in_place(method)
        || matches!(
            method,
            "append"
                | "extend"
                | "insert"
                | "update"
                | "setdefault"
                | "add"
                | "pop"
                | "remove"
                | "clear"
        )
}

/// `a == b` and `a != b` (either one first), the operands written alike.
fn negates(module: &Module, first: &Expr, second: &Expr) -> bool {
    let text = |e: &Expr| module.text(e.range());
    let (Expr::Compare(x), Expr::Compare(y)) = (first, second) else { return false };
    let (([a], [ra]), ([b], [rb])) = ((&*x.ops, &*x.comparators), (&*y.ops, &*y.comparators))
    else {
        return false;
    };
    let opposite = matches!((a, b), (CmpOp::Eq, CmpOp::NotEq) | (CmpOp::NotEq, CmpOp::Eq));
    opposite && text(&x.left) == text(&y.left) && text(ra) == text(rb)
}

/// `x in ranks` where `ranks` is bound by a `for` around the test (one of `levels`).
fn tests_membership_of_loop_item(test: &Expr, levels: &[crate::syntax::tree::Level<'_>]) -> bool {
    let Expr::Compare(c) = test else { return false };
    let ([ruff_python_ast::CmpOp::In], [Expr::Name(set)]) = (&*c.ops, &*c.comparators) else {
        return false;
    };
    levels.iter().any(|level| match (level.owner, level.slot) {
        (Some(Stmt::For(f)), Slot::Body) => {
            let mut bound = false;
            crate::syntax::expr::walk(&f.target, &mut |x| {
                bound |= matches!(x, Expr::Name(n) if n.id == set.id);
            });
            bound
        }
        _ => false,
    })
}

/// The entries of a dict written out with a string literal for every key (`{"model": m,
/// "iter_num": 0}`), in order; `None` for any other dict (a computed key, `**other`).
fn keyed_entries(d: &ruff_python_ast::ExprDict) -> Option<Vec<(&str, &Expr)>> {
    d.items
        .iter()
        .map(|item| match &item.key {
            Some(Expr::StringLiteral(k)) => Some((k.value.to_str(), &item.value)),
            _ => None,
        })
        .collect()
}

/// The name under which a [`Value`] keeps the entry of a dict under `key` (kept apart from
/// the attributes of an object of the project's own class).
fn entry_field(key: &str) -> String {
    format!("[{key:?}]")
}

/// How a field a hook writes is shown ([`written_by_hook`]): "`self.stats` is written by the
/// hook `record` (line 32), registered with `register_forward_hook` at line 28".
///
/// A method of `class` registers a hook (a call whose last name is one of the table's
/// `hook_registrations`) with a function it defines (`register_forward_hook(record)`), a
/// method of the class (`register_forward_hook(self.record)`), or what a method or local
/// function returns when it returns a function it defines (`register_forward_hook(
/// self._hook(name))`, the closure factory); that function writes `self.<attr>`: assigns it
/// or an item of it, or calls a mutating method on it or an item of it
/// (`self.stats[name].append(...)`).
fn written_by_hook(
    module: &Module,
    class: &ruff_python_ast::StmtClassDef,
    attr: &str,
) -> Option<String> {
    for method in class.body.iter().filter_map(|s| match s {
        Stmt::FunctionDef(d) => Some(d),
        _ => None,
    }) {
        let Some(own) = crate::syntax::tree::first_parameter(method) else { continue };
        let mut found = None;
        crate::syntax::tree::walk_scope(&method.body, &mut |stmt, _| {
            if found.is_some() {
                return;
            }
            for e in crate::syntax::tree::header_exprs(stmt) {
                crate::syntax::expr::walk(e, &mut |x| {
                    let Expr::Call(c) = x else { return };
                    let Some(registration) = crate::syntax::expr::last_segment(&c.func) else {
                        return;
                    };
                    if found.is_some() || !knowledge().registers_hook(registration) {
                        return;
                    }
                    let hook = c.arguments.args.first().or_else(|| {
                        c.arguments.keywords.iter().find_map(|k| {
                            k.arg
                                .as_ref()
                                .is_some_and(|a| a.id.as_str() == "hook")
                                .then_some(&k.value)
                        })
                    });
                    for (def, owner) in
                        hook.map(|h| hook_functions(class, method, own, h)).unwrap_or_default()
                    {
                        if let Some(line) = writes_field(module, def, owner, attr) {
                            found = Some(format!(
                                "`{own}.{attr}` is written by the hook `{}` (line {line}), registered with `{registration}` at line {}: it holds what this rank's own modules produced",
                                def.name.id,
                                module.line_of(c.start()),
                            ));
                            return;
                        }
                    }
                });
            }
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The functions the callable `hook`, passed to a hook registration in `method` of `class`
/// (whose object `method` calls `own`), names, each with the name its object goes by inside
/// it: a function `method` defines (`own`), a method of the class (its own first parameter),
/// or the functions a method of the class or a function `method` defines returns by name
/// (`return record`, a function it defines itself).
fn hook_functions<'c>(
    class: &'c ruff_python_ast::StmtClassDef,
    method: &'c StmtFunctionDef,
    own: &'c str,
    hook: &Expr,
) -> Vec<(&'c StmtFunctionDef, &'c str)> {
    let own_method = |e: &Expr| match e {
        Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == own) => {
            super::resolve::method(class, a.attr.id.as_str())
        }
        _ => None,
    };
    match hook {
        Expr::Name(n) => {
            defined_in(method, n.id.as_str()).map(|d| vec![(d, own)]).unwrap_or_default()
        }
        Expr::Attribute(_) => own_method(hook)
            .and_then(|d| crate::syntax::tree::first_parameter(d).map(|p| vec![(d, p)]))
            .unwrap_or_default(),
        Expr::Call(c) => {
            let (factory, inner_own) = match &*c.func {
                Expr::Name(n) => match defined_in(method, n.id.as_str()) {
                    Some(d) => (d, own),
                    None => return Vec::new(),
                },
                f => match own_method(f) {
                    Some(d) => match crate::syntax::tree::first_parameter(d) {
                        Some(p) => (d, p),
                        None => return Vec::new(),
                    },
                    None => return Vec::new(),
                },
            };
            let mut out = Vec::new();
            crate::syntax::tree::walk_scope(&factory.body, &mut |stmt, _| {
                if let Stmt::Return(r) = stmt
                    && let Some(Expr::Name(n)) = r.value.as_deref()
                    && let Some(d) = defined_in(factory, n.id.as_str())
                {
                    out.push((d, inner_own));
                }
            });
            out
        }
        _ => Vec::new(),
    }
}

/// A function `def` defines in its own body (not inside another function) named `name`.
fn defined_in<'c>(def: &'c StmtFunctionDef, name: &str) -> Option<&'c StmtFunctionDef> {
    let mut found = None;
    crate::syntax::tree::walk_scope(&def.body, &mut |stmt, _| {
        if let Stmt::FunctionDef(d) = stmt
            && d.name.id.as_str() == name
        {
            found = Some(d);
        }
    });
    found
}

/// Methods that change a container in place.
const MUTATORS: &[&str] =
    &["append", "extend", "insert", "add", "update", "setdefault", "appendleft"];

/// The first line of `def` (a hook) that writes `owner.attr`: assigns it or an item of it, or
/// calls a mutating method on it or on an item of it.
fn writes_field(module: &Module, def: &StmtFunctionDef, owner: &str, attr: &str) -> Option<u32> {
    let rooted = |mut e: &Expr| loop {
        match e {
            Expr::Subscript(s) => e = &s.value,
            Expr::Attribute(a) => {
                return a.attr.id.as_str() == attr
                    && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == owner);
            }
            _ => return false,
        }
    };
    let mut line = None;
    crate::syntax::tree::walk_scope(&def.body, &mut |stmt, _| {
        if line.is_some() {
            return;
        }
        let writes = match stmt {
            Stmt::Assign(a) => a.targets.iter().any(&rooted),
            Stmt::AugAssign(a) => rooted(&a.target),
            Stmt::AnnAssign(a) => a.value.is_some() && rooted(&a.target),
            Stmt::Expr(x) => matches!(&*x.value, Expr::Call(c)
                if matches!(&*c.func, Expr::Attribute(m)
                    if MUTATORS.contains(&m.attr.id.as_str()) && rooted(&m.value))),
            _ => false,
        };
        if writes {
            line = Some(module.line_of(stmt.start()));
        }
    });
    line
}

/// Whether the decorator `d` hands its function's return value back unchanged: the builtins
/// `staticmethod`, `classmethod`, `property`, and torch's gradient modes (`@torch.no_grad()`).
/// Any other decorator may return something else, or nothing on some ranks (Lightning's
/// `@rank_zero_only` returns `None` on every rank but 0), so what the function's `return`s give
/// says nothing of what its calls give ([`Eval::shown_not_none`]).
fn keeps_returns(d: &Expr) -> bool {
    let callee = match d {
        Expr::Call(c) => &*c.func,
        _ => d,
    };
    crate::syntax::expr::dotted(callee).is_some_and(|name| {
        matches!(
            name.as_str(),
            "staticmethod"
                | "classmethod"
                | "property"
                | "torch.no_grad"
                | "torch.inference_mode"
                | "torch.enable_grad"
        )
    })
}

/// The dependence a table role gives to a value, `origin` quoting where it is read.
fn role_deps(role: Role, origin: String) -> Deps {
    match role {
        Role::Rank => Deps::reason(RankId, origin),
        Role::Environment => Deps::reason(Environment, origin),
        Role::Time => Deps::reason(Time, origin),
        Role::Random => Deps::reason(Randomness, origin),
        Role::Exception => Deps::reason(Exception, origin),
        Role::Config => Deps { config: vec![origin], ..Deps::default() },
        Role::Data => Deps::reason(LocalData, format!("{origin} (each rank holds its own data)")),
        Role::Uniform
        | Role::Collective
        | Role::Payload
        | Role::Wrapper
        | Role::RankOnly
        | Role::Pad
        | Role::Concat
        | Role::FromData
        | Role::Group
        | Role::Progress
        | Role::Stop => Deps::default(),
    }
}
