//! Calls: the knowledge table's rows, the project's own functions (summarised), classes
//! constructed, and what a call is shown to return (never `None`, a group member count).

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'m> Eval<'_, 'm> {
    pub(crate) fn call(&mut self, e: &Expr, c: &ExprCall, at: TextSize, depth: usize) -> Value {
        let callee = self.resolve(&c.func, at);
        match &callee {
            // `len(x)` counts the items of `x`, whatever they hold: only what makes the number
            // of items differ (`range(len(perm))` over a shuffled `perm` counts alike).
            Sym::Path(p) if p == "len" && c.arguments.len() == 1 => {
                if let Some(x) = c.arguments.args.first() {
                    return Value::of(self.length(x, at));
                }
            }
            Sym::Path(p) => {
                if let Some(v) = self.table_call(p, e, c) {
                    return v;
                }
            }
            Sym::Class(class) if class.local.is_some() => {
                let class = class.clone();
                return self.construct(&class, c, at, depth);
            }
            Sym::Function(f) => {
                if let Some(s) = self.summary(f) {
                    let f = f.clone();
                    return self.apply(&s, &f, c, at, |s| s.returns.clone());
                }
                return Value::of(Deps::opaque(format!(
                    "{} (a call too deep to follow)",
                    self.quoted(e)
                )));
            }
            _ => {}
        }
        // A library call the table does not name, a constructor, a method of a value, a call of
        // a callable value (`model(x)`): a function of its receiver and arguments. A function
        // nothing in view defines or imports is not followed.
        let mut out = Deps::default();
        if let Some(root) = crate::syntax::expr::root_name(&c.func)
            && !matches!(&*c.func, Expr::Attribute(_))
            && bindings::lookup(self.module, self.scope, root, at).is_none()
            && !BUILTINS.contains(&root)
        {
            out.opaque = Some(format!("{} (a function defined nowhere in view)", self.quoted(e)));
        }
        let computations = &knowledge().value_computations;
        // `torch.bincount(expert)`: computed from its tensor arguments' values.
        let computed_from_arguments =
            matches!(&callee, Sym::Path(p) if computations.is_function(p));
        if let Expr::Attribute(a) = &*c.func {
            if !matches!(callee, Sym::Path(_)) || !self.is_module_path(&a.value, at) {
                // `d.items()`, `d.values()`: the entries themselves, not a field read from
                // the value.
                let mut receiver = self.value_at(&a.value, at, depth + 1).whole;
                // `counts.sum()`, `mask.nonzero()`: computed from the receiver's values.
                if computations.is_method(a.attr.id.as_str()) {
                    receiver = receiver.valued();
                }
                let entries = matches!(a.attr.id.as_str(), "items" | "values");
                // A method of an object held by another (`self.engine.is_decoupled()`), whose
                // fields were not kept apart: what one field depends on reaches the result only
                // indirectly, as for a plain attribute of it.
                let held = matches!(&*a.value, Expr::Attribute(_));
                out.merge(match (entries, held) {
                    (true, _) => receiver,
                    (false, true) => receiver.read_of().through(via::OBJECT),
                    (false, false) => receiver.read_of(),
                });
            }
        } else if !matches!(callee, Sym::Path(_) | Sym::Class(_)) {
            out.merge(self.value_at(&c.func, at, depth + 1).whole);
        }
        let placement = matches!(&*c.func, Expr::Attribute(a) if PLACEMENT_METHODS.contains(&a.attr.id.as_str()));
        for arg in &c.arguments.args {
            let v = self.value_at(arg, at, depth + 1).whole;
            // `x.to(local_rank)` holds the same values on every rank; `x.to(dtype)` does not.
            if placement && (is_device(arg, &v) || self.typed_as_placement(arg, at)) {
                continue;
            }
            out.merge(if computed_from_arguments { v.valued() } else { v });
        }
        for kw in &c.arguments.keywords {
            if kw.arg.as_ref().is_some_and(|k| DEVICE_KEYWORDS.contains(&k.id.as_str())) {
                continue;
            }
            out.merge(self.value_at(&kw.value, at, depth + 1).whole);
        }
        Value::of(out)
    }

    /// Whether an annotation shows `arg` to be a device or a device's name rather than a dtype:
    /// a call of a project function annotated `-> str` or `-> torch.device`, a name bound
    /// from one (`device_name = get_device_name()`), or a parameter annotated so. What such a
    /// value was read from (the host's accelerator, an environment variable) says where the
    /// tensor lives, not what it holds.
    pub(crate) fn typed_as_placement(&mut self, arg: &Expr, at: TextSize) -> bool {
        let is_placement = |t: &str| matches!(t, "str" | "torch.device");
        let call = match arg {
            Expr::Call(c) => c,
            Expr::Name(n) => {
                let Some(binding) = bindings::lookup(self.module, self.scope, n.id.as_str(), at)
                else {
                    return false;
                };
                match binding.source {
                    Source::Value(Expr::Call(c)) => c,
                    Source::Parameter => {
                        let Some(def) = binding.scope.function else { return false };
                        let annotation = def
                            .parameters
                            .iter_non_variadic_params()
                            .find(|p| p.parameter.name.id.as_str() == n.id.as_str())
                            .and_then(|p| p.parameter.annotation.as_deref());
                        return annotation
                            .and_then(|a| self.annotated_type(a, def.start()))
                            .is_some_and(|t| is_placement(&t));
                    }
                    _ => return false,
                }
            }
            _ => return false,
        };
        self.return_annotation(call).is_some_and(|t| is_placement(&t))
    }

    /// The type a call of a project function is annotated to return (`def f() -> str`:
    /// `str`; `-> torch.dtype`, resolved where the function is defined), if it is.
    pub(crate) fn return_annotation(&mut self, call: &ExprCall) -> Option<String> {
        let Sym::Function(f) = self.resolve(&call.func, call.start()) else { return None };
        self.in_function(&f, |there, def| {
            // An annotation is read where the `def` stands, not inside the function.
            there.scope = Scope::module(there.module);
            there.annotated_type(def.returns.as_deref()?, def.start())
        })?
    }

    /// The type annotation `a` names: `str` for the builtin, else the qualified name it
    /// resolves to (`torch.device`); a string annotation is read as written.
    pub(crate) fn annotated_type(&mut self, a: &Expr, at: TextSize) -> Option<String> {
        match a {
            Expr::Name(n) if n.id.as_str() == "str" => Some("str".to_owned()),
            Expr::StringLiteral(s) => Some(s.value.to_str().to_owned()),
            _ => match self.resolve(a, at) {
                Sym::Path(p) => Some(p),
                _ => None,
            },
        }
    }

    /// The axes of the table's grid of ranks that the process group `e` spans: a call of a
    /// `group` row (`mpu.get_data_parallel_group(with_context_parallel=True)`), or a name
    /// every binding of which before `at` is one (or `None`, no group). `None` when not shown.
    pub(crate) fn grid_axes_of(
        &mut self,
        e: &Expr,
        at: TextSize,
        depth: usize,
    ) -> Option<Vec<String>> {
        if depth > MAX_ORIGIN_HOPS {
            return None;
        }
        match e {
            Expr::Call(c) => match self.resolve(&c.func, at) {
                Sym::Path(p) => knowledge()
                    .api(&p)
                    .filter(|a| a.role == Role::Group && !a.axes.is_empty())
                    .map(|a| a.axes_of(c)),
                _ => None,
            },
            Expr::Name(n) => {
                let all = bindings::bindings(self.module, self.scope, n.id.as_str());
                // A free name of a nested function (`nonlocal mp_group`): the enclosing
                // function's variable, whatever it holds when the nested one is called.
                if all.is_empty()
                    && let Some(def) = self.scope.function
                    && let Some(outer) = self.enclosing_function(def)
                {
                    let inner =
                        std::mem::replace(&mut self.scope, Scope::of(self.module, Some(outer)));
                    let axes = self.grid_axes_of(e, outer.end(), depth + 1);
                    self.scope = inner;
                    return axes;
                }
                // Every binding before the use names a group along the same axes.
                let mut found: Option<Vec<String>> = None;
                let alike = self.every_binding_of(all, at, &mut |this, v, at| {
                    let Some(mut axes) = this.grid_axes_of(v, at, depth + 1) else { return false };
                    axes.sort();
                    if found.as_ref().is_some_and(|f| *f != axes) {
                        return false;
                    }
                    found = Some(axes);
                    true
                });
                found.filter(|_| alike)
            }
            _ => None,
        }
    }

    /// Whether the value of `e` is what a call of `reader` (qualified) returned: the call
    /// itself, a name every binding of which before `at` is one (or `None`), or a call of a
    /// project function every `return` of which is one (`dtype_orig =
    /// cls._set_default_dtype(d)` whose body returns `torch.get_default_dtype()` read before
    /// it changes the setting).
    pub(crate) fn comes_from_call_of(
        &mut self,
        e: &Expr,
        at: TextSize,
        reader: &str,
        depth: usize,
    ) -> bool {
        if depth > MAX_ORIGIN_HOPS {
            return false;
        }
        match e {
            Expr::Call(c) => match self.resolve(&c.func, at) {
                Sym::Path(p) => p == reader,
                Sym::Function(f) => self.every_return(&f, &|there, r, at| {
                    there.comes_from_call_of(r, at, reader, depth + 1)
                }),
                _ => false,
            },
            // (`None` first, replaced when the setting is changed: the restore is then under
            // `if saved is not None`, and passing `None` would raise anyway.)
            Expr::Name(n) => self.every_binding(n.id.as_str(), at, &mut |this, v, at| {
                this.comes_from_call_of(v, at, reader, depth + 1)
            }),
            _ => false,
        }
    }

    /// Whether `e` is the number of ranks in a process group: a call of the table's
    /// `group_sizes` (or a read of such an attribute), `size if dist.is_initialized() else 1`,
    /// a name every binding of which is one, or a project function or property every `return`
    /// of which is one (`@property def world_size(self): return dist.get_world_size(self.group)
    /// if dist.is_initialized() else 1`).
    pub(crate) fn counts_group_members(&mut self, e: &Expr, at: TextSize, depth: usize) -> bool {
        if depth > MAX_ORIGIN_HOPS {
            return false;
        }
        let sized = |sym: Sym, this: &mut Self| match sym {
            Sym::Path(p) => knowledge().counts_group_members(&p),
            // A project helper every return of which is a group's size, or 1: the size of a
            // world without peers (`if not dist.is_initialized(): return 1`), as in a
            // conditional expression below. One return at least must count members.
            Sym::Function(f) => {
                let counted = std::cell::Cell::new(false);
                this.every_return(&f, &|there, r, at| {
                    if crate::syntax::expr::int_literal(r) == Some(1) {
                        return true;
                    }
                    let counts = there.counts_group_members(r, at, depth + 1);
                    counted.set(counted.get() || counts);
                    counts
                }) && counted.get()
            }
            _ => false,
        };
        match e {
            Expr::Call(c) => {
                let callee = self.resolve(&c.func, at);
                sized(callee, self)
            }
            Expr::Attribute(_) => {
                let read = self.resolve(e, at);
                sized(read, self)
            }
            Expr::If(x) => [&*x.body, &*x.orelse].into_iter().all(|branch| {
                crate::syntax::expr::int_literal(branch) == Some(1)
                    || self.counts_group_members(branch, at, depth + 1)
            }),
            Expr::Name(n) => self.every_binding(n.id.as_str(), at, &mut |this, v, at| {
                this.counts_group_members(v, at, depth + 1)
            }),
            _ => false,
        }
    }

    /// Whether `e`, read at `at`, is shown never to be `None`: a literal other than `None`, a
    /// display or comprehension, an f-string, a lambda; a call of a table row that says what
    /// it returns (`get_model_state_dict`: a dict), or of a project function every `return` of
    /// which gives such a value and whose body ends in a `return`; a name every binding of
    /// which before `at` is such a value (a `None` placeholder counts against it here).
    /// A caller that passes such a value decides the callee's `if sd is None:` for it.
    pub(crate) fn shown_not_none(&mut self, e: &Expr, at: TextSize, depth: usize) -> bool {
        if depth > MAX_NOT_NONE_DEPTH {
            return false;
        }
        match e {
            Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::FString(_)
            | Expr::List(_)
            | Expr::Tuple(_)
            | Expr::Dict(_)
            | Expr::Set(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::Generator(_)
            | Expr::Lambda(_) => true,
            Expr::Call(c) => match self.resolve(&c.func, at) {
                Sym::Path(p) => knowledge().api(&p).is_some_and(|a| !a.returns.is_empty()),
                Sym::Function(f) => {
                    let ends_in_return = self
                        .in_function(&f, |_, def| {
                            matches!(def.body.last(), Some(Stmt::Return(_)))
                                && def.decorator_list.iter().all(|d| keeps_returns(&d.expression))
                        })
                        .unwrap_or(false);
                    ends_in_return
                        && self.every_return_written(&f, &mut |there, r, at| {
                            r.is_some_and(|r| there.shown_not_none(r, at, depth + 1))
                        })
                }
                _ => false,
            },
            // A `None` placeholder is a binding that is `None`: it counts against the name.
            Expr::Name(n) => {
                let all = bindings::bindings(self.module, self.scope, n.id.as_str());
                self.every_binding_with_placeholders(all, at, &mut |this, v, at| {
                    this.shown_not_none(v, at, depth + 1)
                })
            }
            _ => false,
        }
    }

    /// Whether every `return` of the project function `f` (a bare one as `None`) is one
    /// `holds` accepts, read where it is written; false when it has none.
    pub(crate) fn every_return_written(
        &mut self,
        f: &FnRef,
        holds: &mut dyn FnMut(&mut Eval<'_, '_>, Option<&Expr>, TextSize) -> bool,
    ) -> bool {
        self.in_function(f, |there, def| {
            let mut returns: Vec<&ruff_python_ast::StmtReturn> = Vec::new();
            crate::syntax::tree::walk_scope(&def.body, &mut |stmt, _| {
                if let Stmt::Return(r) = stmt {
                    returns.push(r);
                }
            });
            !returns.is_empty()
                && returns.iter().all(|r| {
                    let value = r.value.as_deref();
                    holds(there, value, value.map_or(r.start(), Ranged::start))
                })
        })
        .unwrap_or(false)
    }

    /// Whether every binding of `name` made before `at` assigns a value `holds` accepts (read
    /// in the binding's scope, at the binding), a `None` placeholder left out; false when there
    /// is none or one is not an assignment of a value.
    pub(crate) fn every_binding(
        &mut self,
        name: &str,
        at: TextSize,
        holds: &mut dyn FnMut(&mut Self, &'m Expr, TextSize) -> bool,
    ) -> bool {
        let all = bindings::bindings(self.module, self.scope, name);
        self.every_binding_of(all, at, holds)
    }

    /// [`Eval::every_binding`] over a name's bindings already looked up.
    pub(crate) fn every_binding_of(
        &mut self,
        all: Vec<Binding<'m>>,
        at: TextSize,
        holds: &mut dyn FnMut(&mut Self, &'m Expr, TextSize) -> bool,
    ) -> bool {
        let all = all
            .into_iter()
            .filter(|b| !matches!(b.source, Source::Value(Expr::NoneLiteral(_))))
            .collect();
        self.every_binding_with_placeholders(all, at, holds)
    }

    /// Whether every binding of `all` made before `at` assigns a value `holds` accepts (read
    /// in the binding's scope, at the binding), a `None` placeholder included; false when there
    /// is none or one is not an assignment of a value.
    pub(crate) fn every_binding_with_placeholders(
        &mut self,
        all: Vec<Binding<'m>>,
        at: TextSize,
        holds: &mut dyn FnMut(&mut Self, &'m Expr, TextSize) -> bool,
    ) -> bool {
        let all: Vec<_> = all.into_iter().filter(|b| b.effective <= at).collect();
        !all.is_empty()
            && all.iter().all(|b| match b.source {
                Source::Value(v) => {
                    let outer = std::mem::replace(&mut self.scope, b.scope);
                    let r = holds(self, v, b.at);
                    self.scope = outer;
                    r
                }
                _ => false,
            })
    }

    /// Whether the project function `f` has a `return` with a value and every such value is
    /// one `holds` accepts, read where it is written (a bare `return` left out).
    pub(crate) fn every_return(
        &mut self,
        f: &FnRef,
        holds: &dyn Fn(&mut Eval<'_, '_>, &Expr, TextSize) -> bool,
    ) -> bool {
        let mut values = 0;
        let all = self.every_return_written(f, &mut |there, r, at| match r {
            Some(r) => {
                values += 1;
                holds(there, r, at)
            }
            None => true,
        });
        all && values > 0
    }

    /// What `ask` answers about the project function `f` given its `def` and an evaluator in
    /// its module and scope (at this call depth); `None` when the `def` is not found.
    pub(crate) fn in_function<R>(
        &self,
        f: &FnRef,
        ask: impl FnOnce(&mut Eval<'_, '_>, &StmtFunctionDef) -> R,
    ) -> Option<R> {
        let module = f.module.clone();
        let target: &Module = module.as_deref().unwrap_or(self.module);
        let def = crate::values::resolve::def_at(target, f.def)?;
        let mut there = Eval::new(self.cx, target, Scope::of(target, Some(def)), self.call_depth);
        Some(ask(&mut there, def))
    }

    /// The function `def` is nested in, if it is nested in one.
    pub(crate) fn enclosing_function(&self, def: &StmtFunctionDef) -> Option<&'m StmtFunctionDef> {
        let path = self.module.path(self.line_of(def.start()))?;
        let own = path
            .levels
            .iter()
            .position(|l| matches!(l.stmt(), Stmt::FunctionDef(d) if std::ptr::eq(d, def)))?;
        path.levels[..own].iter().rev().find_map(|l| match l.stmt() {
            Stmt::FunctionDef(outer) => Some(outer),
            _ => None,
        })
    }

    /// An instance of one of the project's classes, field by field: positional arguments go
    /// to the fields (a dataclass's annotated names) or `__init__` parameters in order.
    pub(crate) fn construct(
        &mut self,
        class: &ClassRef,
        c: &ExprCall,
        at: TextSize,
        depth: usize,
    ) -> Value {
        let module: &Module = class.module.as_deref().unwrap_or(self.module);
        let names = class
            .local
            .and_then(|at| crate::values::resolve::class_at(module, at))
            .map(field_names)
            .unwrap_or_default();
        let mut fields: Vec<(String, Deps)> = Vec::new();
        let mut whole = Deps::default();
        for (i, arg) in c.arguments.args.iter().enumerate() {
            let d = self.value_at(arg, at, depth + 1).whole;
            if let Some(name) = names.get(i) {
                fields.push((name.clone(), d.clone()));
            }
            whole.merge(d);
        }
        for kw in &c.arguments.keywords {
            let d = self.value_at(&kw.value, at, depth + 1).whole;
            if let Some(name) = kw.arg.as_ref() {
                fields.push((name.id.to_string(), d.clone()));
            }
            whole.merge(d);
        }
        let fields = (!names.is_empty() || !fields.is_empty()).then_some(fields);
        Value { whole, elements: None, fields }
    }

    /// Calls the table knows.
    pub(crate) fn table_call(&mut self, path: &str, e: &Expr, c: &ExprCall) -> Option<Value> {
        let api = knowledge().api(path)?;
        let origin = self.quoted(e);
        let deps = match api.role {
            // Padding keeps its input's values, a tensor made from data holds them, a wrapper
            // returns what it wraps: calls like any other.
            // A group handle too (what is asked of it is asked of an object, as for any call).
            Role::Pad | Role::Concat | Role::FromData | Role::Wrapper | Role::Group => return None,
            // `tqdm(loader, disable=not is_main)`: the loader's items.
            Role::Progress => return Some(self.value(c.arguments.args.first()?, c.start())),
            Role::Environment if path == "os.environ.get" || path == "os.getenv" => {
                let key = c.arguments.args.first()?;
                self.environ(key, e)
            }
            // The rank within a group along the grid's axes (`mpu.get_data_parallel_rank()`).
            Role::Rank if !api.axes.is_empty() => {
                Deps::rank_within(origin, crate::values::grid_group(&api.axes_of(c)))
            }
            Role::Rank => {
                match api.group_arg.and_then(|i| crate::values::group_argument(c, Some(i))) {
                    Some(group) => Deps::rank_within(origin, self.text(group).to_owned()),
                    None => Deps::reason(RankId, origin),
                }
            }
            Role::Environment => Deps::reason(Environment, origin),
            Role::Time => Deps::reason(Time, origin),
            Role::Random => {
                // The generator or seed passed in can make the draw rank-specific too.
                let mut d = Deps::reason(Randomness, origin);
                for arg in
                    c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value))
                {
                    d.merge(self.value(arg, c.start()).whole);
                }
                d
            }
            Role::Exception => Deps::reason(Exception, origin),
            Role::Config => Deps { config: vec![origin], ..Deps::default() },
            Role::Collective if api.agrees == Some(Agrees::Return) => Deps {
                agreed: vec![format!("{origin} gives every rank the same result")],
                ..Deps::default()
            },
            // The result of an in-place collective is a work handle or None.
            Role::Collective | Role::Uniform | Role::Payload | Role::RankOnly | Role::Stop => {
                Deps::default()
            }
            Role::Data => {
                let mut d = Deps::reason(
                    LocalData,
                    format!("{origin} (a data source: each rank reads its own data)"),
                );
                for arg in
                    c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value))
                {
                    d.merge(self.value(arg, c.start()).whole);
                }
                d
            }
        };
        Some(Value::of(deps))
    }

    /// Whether `e` resolves to a module (so `e.x` is a constant or a function of it).
    pub(crate) fn is_module_path(&mut self, e: &Expr, at: TextSize) -> bool {
        match e {
            Expr::Name(n) => matches!(
                bindings::lookup(self.module, self.scope, n.id.as_str(), at).map(|b| b.source),
                Some(Source::Import { .. })
            ),
            Expr::Attribute(a) => self.is_module_path(&a.value, at),
            _ => false,
        }
    }
}
