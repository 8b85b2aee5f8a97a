//! Following names: a name is followed to its bindings, parameters to what callers pass, loop
//! counters to how often their loop runs, and containers to what is written into them.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'m> Eval<'_, 'm> {
    pub(crate) fn name(&mut self, name: &str, at: TextSize) -> Value {
        if let Some((_, v)) = self.shadow.iter().rev().find(|(n, _)| n == name) {
            return v.clone();
        }
        let Some(binding) = bindings::lookup(self.module, self.scope, name, at) else {
            if BUILTINS.contains(&name) {
                return Value::default();
            }
            return Value::of(Deps::opaque(format!("`{name}` (not assigned in this file)")));
        };
        if let Some(agreement) = self.agreed_between(name, &binding, at) {
            return Value::of(Deps { agreed: vec![agreement], ..Deps::default() });
        }
        let loop_item = matches!(binding.source, Source::LoopItem(_) | Source::LoopElement(..));
        let mut value = self.follow_from(name, binding, Some(at));
        if loop_item {
            // Each iteration's item is a fresh object: only what the body writes into it before
            // this use reaches it (a write later in the body goes into this item after the use,
            // and the next iteration takes the next item).
            value.whole.merge(self.mutations(name, &binding, Some(at)));
        }
        value
    }

    /// Follows `name` to what `binding` assigns, memoised per binding.
    pub(crate) fn follow(&mut self, name: &str, binding: Binding<'m>) -> Value {
        self.follow_from(name, binding, None)
    }

    /// [`Self::follow`] for a use at `use_at`: the `if`s (and loops, handlers) that hold both
    /// the binding and a later use decide nothing between the ranks that reach the use (every
    /// one of them passed the same tests on the way), so only the tests around the binding
    /// alone count (`model_module` chosen under `if rank in ranks(embd_group):` and read
    /// inside that block).
    pub(crate) fn follow_from(
        &mut self,
        name: &str,
        binding: Binding<'m>,
        use_at: Option<TextSize>,
    ) -> Value {
        match binding.source {
            Source::Import { .. } | Source::Function(_) | Source::Class(_) => {
                return Value::default();
            }
            Source::Parameter => return Value::of(self.parameter(name, &binding)),
            Source::Caught => {
                let line = self.line_of(binding.at);
                return Value::of(Deps::reason(
                    Exception,
                    format!("the exception caught at line {line}"),
                ));
            }
            _ => {}
        }
        if self.tracing.contains(&binding.at) {
            return Value::default();
        }
        if self.tracing.len() >= MAX_HOPS {
            return Value::of(Deps::opaque(format!("`{name}` (followed too far)")));
        }
        if let (Source::LoopCounter(_), Some(at)) = (binding.source, use_at)
            && let Some(value) = self.counter_in_its_loop(name, &binding, at)
        {
            return value;
        }
        let shared = use_at.map_or(0, |at| self.levels_shared(binding.at, at));
        let key = (key_of(self.module), binding.at, name.to_owned(), shared);
        if let Some(v) = self.cx.memo.borrow().get(&key) {
            return v.clone();
        }
        let hop = self.describe(name, &binding);
        let outer_scope = std::mem::replace(&mut self.scope, binding.scope);
        let foreign = self.foreign.take();
        self.tracing.push(binding.at);
        let mut value = self.bound_value(name, &binding);
        // `if rank == 0: store = Store(path)` ... `if rank != 0: store = Store(path)`: every
        // rank makes the same call, in turns; the turn decides nothing about the result.
        if let Some((turn, other)) = self.turn_taken(name, &binding) {
            value.merge_everywhere(self.control_except(binding.at, Some(turn), shared));
            value.whole.merge(self.value(other, other.start()).whole);
        } else {
            // `if rank != 0: stop = box[0]` after rank 0 broadcast its own `stop` in `box`:
            // every rank holds rank 0's value after the `if`; its test decides nothing.
            let received = self.received_from_source(name, &binding);
            value.merge_everywhere(self.control_except(binding.at, received, shared));
        }
        if !matches!(binding.source, Source::LoopItem(_) | Source::LoopElement(..)) {
            // A write into any entry or attribute may be the one read later.
            value.merge_everywhere(self.mutations(name, &binding, None));
        }
        self.tracing.pop();
        self.foreign = foreign;
        self.scope = outer_scope;
        let value = value.hop(&hop);
        self.cx.memo.borrow_mut().insert(key, value.clone());
        value
    }

    /// A loop counter read inside its own loop: on the k-th pass it holds `start + k * step`
    /// (`range(start, stop, step)`, `enumerate(items, start=start)`) however many passes there
    /// are, so ranks on the same pass read the same value unless the start or the step differ.
    /// How many passes each rank makes is the loop's own decision (the `for` is a candidate of
    /// its own), not a reason for a test of the counter to differ. Read after the loop, the
    /// counter holds how many passes ran: that is its iterable's length (`bound_value`).
    /// `None` when the use is not in the body of the loop that binds it.
    pub(crate) fn counter_in_its_loop(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
        use_at: TextSize,
    ) -> Option<Value> {
        let path = self.module.path(self.line_of(use_at))?;
        let counting = path.scope_levels(self.module).iter().find_map(|level| {
            match (level.owner, level.slot) {
                (Some(Stmt::For(f)), Slot::Body) if f.start() == binding.at => Some(f),
                _ => None,
            }
        })?;
        let Expr::Call(c) = &*counting.iter else { return None };
        let args = &c.arguments.args;
        let start_keyword =
            c.arguments.keywords.iter().filter(|k| k.arg.as_ref().is_some_and(|a| a == "start"));
        // What the counter starts from and steps by: every argument of `range` but its stop
        // (a lone argument is the stop), `enumerate`'s start.
        let offsets: Vec<&Expr> = match crate::syntax::expr::last_segment(&c.func) {
            Some("range") if args.len() >= 2 => {
                args.iter().enumerate().filter(|(i, _)| *i != 1).map(|(_, a)| a).collect()
            }
            Some("range") => Vec::new(),
            Some("enumerate") => {
                args.iter().skip(1).chain(start_keyword.map(|k| &k.value)).collect()
            }
            _ => return None,
        };
        let outer_scope = std::mem::replace(&mut self.scope, binding.scope);
        let foreign = self.foreign.take();
        self.tracing.push(binding.at);
        let mut deps = Deps::default();
        for offset in offsets {
            deps.merge(self.value(offset, binding.at).whole);
        }
        let shared = self.levels_shared(binding.at, use_at);
        deps.merge(self.control_except(binding.at, None, shared));
        self.tracing.pop();
        self.foreign = foreign;
        self.scope = outer_scope;
        let hop = format!(
            "`{name}` counts the passes of the loop at line {} from its start",
            self.line_of(binding.at)
        );
        Some(Value::of(deps).hop(&hop))
    }

    /// The value an assignment stores or a function returns: `is_rigid = isinstance(sd[KEY],
    /// dict)`, `self.enabled = self.state is not None` or `return bias is not None and param
    /// is bias` holds structure tests, each decided as that test would be in an `if`; anything
    /// else is its value.
    pub(crate) fn assigned(&mut self, v: &Expr, at: TextSize) -> Value {
        if let Expr::BoolOp(b) = v {
            let tests: Vec<Option<Deps>> = b
                .values
                .iter()
                .map(|x| {
                    crate::values::condition::sentinel_test(self, x, at)
                        .or_else(|| crate::values::condition::structure_test(self, x, at))
                })
                .collect();
            if tests.iter().any(Option::is_some) {
                let mut deps = Deps::default();
                for (x, test) in b.values.iter().zip(tests) {
                    deps.merge(test.unwrap_or_else(|| self.value(x, at).whole));
                }
                return Value::of(deps);
            }
        }
        match crate::values::condition::sentinel_test(self, v, at)
            .or_else(|| crate::values::condition::structure_test(self, v, at))
        {
            Some(d) => Value::of(d),
            None => self.value(v, at),
        }
    }

    pub(crate) fn bound_value(&mut self, name: &str, binding: &Binding<'m>) -> Value {
        let at = binding.at;
        match binding.source {
            Source::Value(v) => self.assigned(v, at),
            Source::WithItem(v) => self.value(v, at),
            Source::Element(v, i) => Value::of(self.value(v, at).element(i)),
            Source::Augmented(v) => {
                let mut out = self.value(v, at);
                // What it started from: the other bindings of the name in this scope.
                for other in bindings::bindings(self.module, binding.scope, name) {
                    if other.at != binding.at && !matches!(other.source, Source::Augmented(_)) {
                        let prior = self.follow(name, other);
                        out.whole.merge(prior.whole);
                    }
                }
                // An accumulator counts the iterations of the loops around it.
                out.whole.merge(self.loops_around(binding));
                out
            }
            Source::LoopItem(iter) => self.items(iter, at),
            Source::LoopElement(iter, i) => Value::of(self.items(iter, at).element(i)),
            Source::LoopCounter(counted) => Value::of(self.length(counted, at)),
            Source::Caught
            | Source::Parameter
            | Source::Import { .. }
            | Source::Function(_)
            | Source::Class(_) => Value::default(),
        }
    }

    /// What iterating `iter` yields: a data source's items are the rank's own data; a
    /// generator of the project yields what its `yield`s say; anything else, what the
    /// iterable itself depends on.
    pub(crate) fn items(&mut self, iter: &Expr, at: TextSize) -> Value {
        if let Expr::Call(c) = iter {
            match self.resolve(&c.func, at) {
                Sym::Function(f) => {
                    if let Some(s) = self.summary(&f)
                        && s.is_generator
                    {
                        return self.apply(&s, &f, c, at, |s| s.returns.clone());
                    }
                }
                Sym::Path(p) => {
                    if let Some(api) = knowledge().api(&p)
                        && api.role == Role::Data
                    {
                        // What the loader was built from (a sampler given the rank, a worker
                        // seed) makes its items each rank's own data, not a decision by rank.
                        let mut v = self.value(iter, at);
                        v.whole.reasons.clear();
                        v.whole.merge(Deps::reason(
                            LocalData,
                            format!(
                                "the items of {} (each rank iterates its own data)",
                                self.quoted(iter)
                            ),
                        ));
                        return v;
                    }
                }
                _ => {}
            }
        }
        // `for batch in loader` where `loader` is a data loader built elsewhere in view.
        let mut v = self.value(iter, at);
        let data_source = self.is_data_source(iter, at);
        if data_source {
            // As above: the items are local data, not a decision by what built the loader.
            v.whole.reasons.retain(|r| r.kind == LocalData);
        }
        if data_source && !v.whole.reasons.iter().any(|r| r.kind == LocalData) {
            v.whole.merge(Deps::reason(
                LocalData,
                format!("the items of {} (each rank iterates its own data)", self.quoted(iter)),
            ));
        }
        v
    }

    /// Whether `e` names a data source of the table (directly or through a name bound to one).
    pub(crate) fn is_data_source(&mut self, e: &Expr, at: TextSize) -> bool {
        matches!(self.resolve(e, at), Sym::Instance(ClassRef { qualified: Some(q), .. }) if knowledge().api(&q).is_some_and(|a| a.role == Role::Data))
    }

    pub(crate) fn parameter(&mut self, name: &str, binding: &Binding<'m>) -> Deps {
        // Framework hooks: `training_step(self, batch, ...)` gets the rank's own batch.
        if let Some(def) = binding.scope.function
            && let Some(class) = crate::values::resolve::class_of(self.module, def)
        {
            let bases = self.class_bases(class);
            for base in &bases {
                for hook in knowledge().hooks(base, def.name.id.as_str()) {
                    if hook.parameter.as_deref() == Some(name) && hook.role == Some(Role::Data) {
                        return Deps::reason(
                            LocalData,
                            format!(
                                "`{name}` (the batch the framework passes to `{}`; each rank gets its own)",
                                def.name.id
                            ),
                        );
                    }
                }
            }
        }
        Deps::param(name)
    }

    /// "`x` (assigned from `f(y)` at line 12)".
    pub(crate) fn describe(&self, name: &str, binding: &Binding<'_>) -> String {
        let module = self.module_of(binding);
        let text = |e: &Expr| quote(module.text(e.range()));
        let line = module.line_of(binding.at);
        match binding.source {
            Source::Value(v) => format!("`{name}` = {} (line {line})", text(v)),
            Source::Element(v, i) => format!("`{name}` = element {i} of {} (line {line})", text(v)),
            Source::Augmented(v) => format!("`{name}` updated with {} (line {line})", text(v)),
            Source::LoopItem(v) => format!("`{name}` iterates {} (line {line})", text(v)),
            Source::LoopElement(v, i) => {
                format!("`{name}` = element {i} of each item of {} (line {line})", text(v))
            }
            Source::LoopCounter(v) => {
                format!("`{name}` counts the iterations over {} (line {line})", text(v))
            }
            Source::WithItem(v) => format!(
                "`{name}` bound by `with {}` (line {line})",
                crate::syntax::expr::snippet(module.text(v.range()))
            ),
            _ => format!("`{name}` (line {line})"),
        }
    }

    pub(crate) fn module_of(&self, _binding: &Binding<'_>) -> &'m Module {
        self.module
    }
}
