//! Control dependence (decisions): what decides whether, or which, assignment runs (the `if`s, loops
//! and handlers around a binding), and which branch a rank takes.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'m> Eval<'_, 'm> {
    /// What decides whether the statement at `at` runs at all: the tests of the `if`s and
    /// `while`s around it in its function, and the `except` it sits in.
    pub(crate) fn control_at(&mut self, at: TextSize) -> Deps {
        self.control_except(at, None, 0)
    }

    /// How many of the blocks around the binding at `binding` (outermost first, within its
    /// function) also hold the use at `use_at`, when the binding comes first (a value carried
    /// over from an earlier iteration may have been bound under other outcomes).
    pub(crate) fn levels_shared(&self, binding: TextSize, use_at: TextSize) -> usize {
        if binding >= use_at {
            return 0;
        }
        let (Some(bound), Some(used)) =
            (self.module.path(self.line_of(binding)), self.module.path(self.line_of(use_at)))
        else {
            return 0;
        };
        let (bound, used) = (bound.scope_levels(self.module), used.scope_levels(self.module));
        bound.iter().zip(used).take_while(|(b, u)| b.same_suite(u)).count()
    }

    /// [`Self::control_at`] without the test of the `if` that starts at `skip`, nor those of
    /// the `shared` outermost blocks (which also hold the use asked about).
    pub(crate) fn control_except(
        &mut self,
        at: TextSize,
        skip: Option<TextSize>,
        shared: usize,
    ) -> Deps {
        let mut out = Deps::default();
        let line = self.line_of(at);
        let Some(path) = self.module.path(line) else { return out };
        let levels: Vec<_> = path.scope_levels(self.module).to_vec();
        for level in levels.iter().skip(shared) {
            let Some(owner) = level.owner else { continue };
            if skip == Some(owner.start()) {
                continue;
            }
            match (owner, level.slot) {
                // `for ranks in all_groups: g = new_group(ranks); if rank in ranks: mine = g`:
                // every rank is in one of the rank sets enumerated, so every rank runs the body
                // in some iteration (which group it keeps is the rank's own, whether it keeps
                // one is not).
                (Stmt::If(s), Slot::Body) if tests_membership_of_loop_item(&s.test, &levels) => {}
                (Stmt::If(s), Slot::Body) => {
                    let d = crate::values::condition::decision(self, &s.test, s.start());
                    out.merge(d.through(via::CHOICE).hop(&format!(
                        "under `if {}` (line {})",
                        crate::syntax::expr::snippet(self.module.text(s.test.range())),
                        self.line_of(s.start())
                    )));
                }
                (Stmt::If(s), Slot::Clause(i)) => {
                    // Reaching clause i means the tests before it were false.
                    for c in s.elif_else_clauses.iter().take(i + 1).filter_map(|c| c.test.as_ref())
                    {
                        let d = crate::values::condition::decision(self, c, c.start());
                        out.merge(d.through(via::CHOICE).hop(&format!(
                            "under `elif {}`",
                            crate::syntax::expr::snippet(self.module.text(c.range()))
                        )));
                    }
                    let d = crate::values::condition::decision(self, &s.test, s.start());
                    out.merge(d.through(via::CHOICE).hop(&format!(
                        "in the `else` of `if {}` (line {})",
                        crate::syntax::expr::snippet(self.module.text(s.test.range())),
                        self.line_of(s.start())
                    )));
                }
                (Stmt::While(s), Slot::Body) => {
                    let d = crate::values::condition::decision(self, &s.test, s.start());
                    out.merge(d.through(via::CHOICE).hop(&format!(
                        "inside `while {}`",
                        crate::syntax::expr::snippet(self.module.text(s.test.range()))
                    )));
                }
                // `try: torch.cuda.get_device_capability() except RuntimeError: return False`,
                // `try: import torch_mlu`: what the body asks or imports is the same on every
                // rank, so is whether it raised.
                (Stmt::Try(t), Slot::Handler(_)) if self.probes_environment(&t.body) => {}
                (Stmt::Try(t), Slot::Handler(i)) => {
                    let structural =
                        t.handlers.get(i).is_some_and(crate::values::classify::structural_handler);
                    let bits = if structural { via::CHOICE | via::STRUCTURAL } else { via::CHOICE };
                    out.merge(
                        Deps::reason(
                            Exception,
                            format!(
                                "the `except` at line {} (only ranks that raised run it)",
                                self.line_of(t.start())
                            ),
                        )
                        .through(bits),
                    );
                }
                _ => {}
            }
        }
        out
    }

    /// Whether a `try` body only probes the environment the job was launched in: it imports
    /// packages, or asks the table's configuration rows (what kind of accelerator the job was
    /// launched on: `torch.cuda.device_count()`, `torch.xpu.is_available()`), or whether an
    /// imported module has an attribute (`hasattr(torch, "mlu")`), with at least one such probe
    /// and no other call. An error it raises says what the node type or the installed packages
    /// lack, alike on every rank: one job runs one software image on one node type
    /// (accelerate's `is_xpu_available`, mmengine's `try: import torch_mlu`, olmo-core's
    /// `try: from olmo_core.nn.hf import ...` / `except ImportError`), or the table's
    /// `import_probes` (`ext = importlib.import_module(name)`). At module level a body
    /// that starts with an import is such a probe whatever follows (mmengine's
    /// `import torch_npu; torch.npu.set_compile_mode(...)`): it runs once as the module is
    /// imported, before any rank has data of its own.
    pub(crate) fn probes_environment(&mut self, body: &[Stmt]) -> bool {
        let at_module_level = || {
            body.first()
                .and_then(|s| self.module.path(self.line_of(s.start())))
                .is_some_and(|path| path.innermost_function(self.module).is_none())
        };
        if matches!(body.first(), Some(Stmt::Import(_) | Stmt::ImportFrom(_))) && at_module_level()
        {
            return true;
        }
        let mut calls: Vec<&ExprCall> = Vec::new();
        let mut imports = false;
        for stmt in body {
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => imports = true,
                Stmt::Expr(_) | Stmt::Assign(_) | Stmt::Return(_) | Stmt::Pass(_) => {}
                _ => return false,
            }
            for e in crate::syntax::tree::header_exprs(stmt) {
                crate::syntax::expr::walk(e, &mut |x| {
                    if let Expr::Call(c) = x {
                        calls.push(c);
                    }
                });
            }
        }
        (imports || !calls.is_empty())
            && calls.into_iter().all(|c| match self.resolve(&c.func, c.start()) {
                Sym::Path(p) if p == "hasattr" => c
                    .arguments
                    .args
                    .first()
                    .is_some_and(|on| matches!(self.resolve(on, c.start()), Sym::Path(_))),
                // `importlib.import_module(name)`: an import written as a call.
                Sym::Path(p) if knowledge().is_import_probe(&p) => true,
                Sym::Path(p) => knowledge().api(&p).is_some_and(|api| api.role == Role::Config),
                _ => false,
            })
    }

    /// Whether nothing the `try` body `body` runs before the statement at `line` can raise on
    /// some ranks only, nor can that statement before its call: imports (one software image),
    /// `pass`, docstrings, assignments to names and `if`s (their exits included) made of
    /// literals, names, attribute reads, operators and calls of the table's
    /// `builds_from_arguments` (`torch.tensor([int(flag)], device=device)`). A failure the
    /// handler catches is then the collective's own, met by every rank of its group.
    pub(crate) fn nothing_raises_before(&mut self, body: &[Stmt], line: u32) -> bool {
        for stmt in body {
            let first = self.line_of(stmt.start());
            let last = self.line_of(stmt.end());
            if first > line {
                return true;
            }
            if (first..=last).contains(&line) {
                return match stmt {
                    Stmt::Expr(e) => self.call_of_built_arguments(&e.value),
                    Stmt::Assign(a) => {
                        a.targets.iter().all(Expr::is_name_expr)
                            && self.call_of_built_arguments(&a.value)
                    }
                    // Only the clause holding the line ran, after the tests before it
                    // (`if dist.is_initialized(): dist.barrier() else:
                    // accelerator.wait_for_everyone()`: the `else` runs no barrier of the body).
                    Stmt::If(s) => {
                        let clauses = std::iter::once((None, &s.body[..])).chain(
                            s.elif_else_clauses.iter().map(|c| (c.test.as_ref(), &c.body[..])),
                        );
                        let mut tests = vec![&*s.test];
                        for (test, suite) in clauses {
                            tests.extend(test);
                            let first = suite.first().map(|x| self.line_of(x.start()));
                            let last = suite.last().map(|x| self.line_of(x.end()));
                            if first.is_some_and(|f| f <= line) && last.is_some_and(|l| line <= l) {
                                return tests.into_iter().all(|t| self.built_from_arguments(t))
                                    && self.nothing_raises_before(suite, line);
                            }
                        }
                        false
                    }
                    _ => false,
                };
            }
            let harmless = match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) | Stmt::Pass(_) => true,
                Stmt::Expr(e) => {
                    e.value.is_string_literal_expr() || self.built_from_arguments(&e.value)
                }
                Stmt::Assign(a) => {
                    a.targets.iter().all(Expr::is_name_expr) && self.built_from_arguments(&a.value)
                }
                Stmt::Return(r) => r.value.as_deref().is_none_or(|v| self.built_from_arguments(v)),
                Stmt::If(s) => {
                    self.built_from_arguments(&s.test)
                        && s.elif_else_clauses
                            .iter()
                            .all(|c| c.test.as_ref().is_none_or(|t| self.built_from_arguments(t)))
                        && std::iter::once(&s.body[..])
                            .chain(s.elif_else_clauses.iter().map(|c| &c.body[..]))
                            .all(|suite| self.nothing_raises_before(suite, u32::MAX))
                }
                _ => false,
            };
            if !harmless {
                return false;
            }
        }
        true
    }

    /// A call (the collective) whose arguments are [`Eval::built_from_arguments`].
    fn call_of_built_arguments(&mut self, e: &Expr) -> bool {
        let Expr::Call(c) = crate::names::bindings::awaited(e) else { return false };
        c.arguments.args.iter().all(|x| self.built_from_arguments(x))
            && c.arguments.keywords.iter().all(|k| self.built_from_arguments(&k.value))
    }

    /// Whether evaluating `e` can only raise alike on every rank given the same code: see
    /// [`Eval::nothing_raises_before`]. An item lookup (`shards[rank]`) is left out.
    fn built_from_arguments(&mut self, e: &Expr) -> bool {
        match e {
            Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_)
            | Expr::Name(_) => true,
            Expr::Attribute(a) => self.built_from_arguments(&a.value),
            Expr::List(l) => l.elts.iter().all(|x| self.built_from_arguments(x)),
            Expr::Tuple(t) => t.elts.iter().all(|x| self.built_from_arguments(x)),
            Expr::UnaryOp(u) => self.built_from_arguments(&u.operand),
            Expr::BoolOp(b) => b.values.iter().all(|x| self.built_from_arguments(x)),
            Expr::Compare(c) => {
                self.built_from_arguments(&c.left)
                    && c.comparators.iter().all(|x| self.built_from_arguments(x))
            }
            Expr::If(i) => {
                self.built_from_arguments(&i.test)
                    && self.built_from_arguments(&i.body)
                    && self.built_from_arguments(&i.orelse)
            }
            Expr::Call(c) => {
                matches!(self.resolve(&c.func, c.start()), Sym::Path(p) if knowledge().builds_from_arguments(&p))
                    && c.arguments.args.iter().all(|x| self.built_from_arguments(x))
                    && c.arguments.keywords.iter().all(|k| self.built_from_arguments(&k.value))
            }
            _ => false,
        }
    }

    /// Ranks taking turns at the same call: `binding` assigns `name = f(...)` directly in one
    /// block of an `if` whose test compares the rank (`rank == 0`), and the complementary block
    /// (its `else`, or a neighbouring `if` with the negated test, `rank != 0`) assigns
    /// `name = f(...)` too: rank 0 loads first, the others after a barrier, and every rank ends
    /// up with what `f` returns. Returns the start of the `if` (whose test then decides
    /// nothing) and the other call.
    pub(crate) fn turn_taken(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
    ) -> Option<(TextSize, &'m Expr)> {
        let Source::Value(Expr::Call(call)) = binding.source else { return None };
        let path = self.module.path(self.line_of(binding.at))?;
        let levels: Vec<_> = path.scope_levels(self.module).to_vec();
        let (last, outer) = levels.split_last()?;
        let Some(Stmt::If(s)) = last.owner else { return None };
        let Expr::Compare(test) = &*s.test else { return None };
        if !matches!(&*test.ops, [CmpOp::Eq | CmpOp::NotEq]) {
            return None;
        }
        let ranked = self.value(&s.test, s.start()).whole;
        if !ranked.reasons.iter().any(|r| r.kind == RankId) {
            return None;
        }
        let module: &'m Module = self.module;
        let callee = module.text(call.func.range());
        let makes = |suite: &'m [Stmt]| {
            suite.iter().find_map(|stmt| match stmt {
                Stmt::Assign(a)
                    if matches!(&*a.targets, [Expr::Name(n)] if n.id.as_str() == name)
                        && matches!(&*a.value, Expr::Call(c) if module.text(c.func.range()) == callee)
                        && a.start() != binding.at =>
                {
                    Some(&*a.value)
                }
                _ => None,
            })
        };
        let only_else = match &*s.elif_else_clauses {
            [c] if c.test.is_none() => Some(&c.body),
            _ => None,
        };
        let other = match last.slot {
            Slot::Body => only_else.and_then(|body| makes(body)).or_else(|| {
                // A neighbouring `if` with the negated test.
                let around = outer.last()?.suite;
                around.iter().find_map(|stmt| match stmt {
                    Stmt::If(o) if o.start() != s.start() && negates(module, &s.test, &o.test) => {
                        makes(&o.body)
                    }
                    _ => None,
                })
            }),
            Slot::Clause(0) if only_else.is_some() => makes(&s.body),
            _ => None,
        }?;
        Some((s.start(), other))
    }

    /// How many times the loops around an accumulator run: their iterables' lengths.
    pub(crate) fn loops_around(&mut self, binding: &Binding<'m>) -> Deps {
        let mut out = Deps::default();
        let line = self.line_of(binding.at);
        let Some(path) = self.module.path(line) else { return out };
        let levels: Vec<_> = path.scope_levels(self.module).to_vec();
        for level in &levels {
            if let (Some(Stmt::For(f)), Slot::Body) = (level.owner, level.slot) {
                let d = self.length(&f.iter, f.start());
                out.merge(d.hop(&format!(
                    "once per iteration over {} (line {})",
                    quote(self.module.text(f.iter.range())),
                    self.line_of(f.start())
                )));
            }
        }
        out
    }

    /// What later statements of the scope write into the value in place: `x[i] = v`,
    /// `x.attr = v`, `x[i] += v`, and calls of in-place methods (torch's `x.zero_()`,
    /// `x.copy_(y)`: a trailing underscore; a list's `append`/`extend`/`insert`, a dict's
    /// `update`/`setdefault`), each with what decides whether it runs.
    /// `until`: only the writes that start before it.
    pub(crate) fn mutations(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
        until: Option<TextSize>,
    ) -> Deps {
        // (statement, values written, whether it writes into a part: a container's item or an
        // object's attribute rather than the value itself)
        let mut found: Vec<(&'m Stmt, Vec<&'m Expr>, bool)> = Vec::new();
        let made_empty = matches!(binding.source, Source::Value(v) if is_empty_container(v));
        crate::syntax::tree::walk_scope(binding.scope.suite, &mut |stmt, _| {
            if stmt.start() < binding.effective || until.is_some_and(|u| stmt.start() >= u) {
                return;
            }
            let writes: Option<(Vec<&Expr>, bool)> = match stmt {
                // `kwargs["device_ids"] = [local_rank]`: keyword arguments being built, whose
                // placement entry says where a value goes, as that keyword does in a call.
                Stmt::Assign(a)
                    if a.targets.iter().any(|t| writes_into(t, name) && !places_on_device(t)) =>
                {
                    Some((vec![&*a.value], true))
                }
                Stmt::AugAssign(a) if writes_into(&a.target, name) => Some((vec![&*a.value], true)),
                Stmt::Expr(e) => match &*e.value {
                    Expr::Call(c) => match &*c.func {
                        Expr::Attribute(m)
                            if matches!(&*m.value, Expr::Name(n) if n.id.as_str() == name)
                                && is_in_place(m.attr.id.as_str()) =>
                        {
                            Some((
                                c.arguments
                                    .args
                                    .iter()
                                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                                    .collect(),
                                !is_tensor_in_place(m.attr.id.as_str()),
                            ))
                        }
                        // `losses = []` handed to `schedule.step(target=y, losses=losses)`: a
                        // container made empty and passed to a call is filled there, from what
                        // the call is given (its receiver and its other arguments).
                        _ if made_empty && passes_bare(c, name) => {
                            Some((inputs_besides(c, name), true))
                        }
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            if let Some((w, into_part)) = writes {
                found.push((stmt, w, into_part));
            }
        });
        let mut out = Deps::default();
        for (stmt, values, into_part) in found {
            if self.tracing.contains(&stmt.start()) || self.tracing.len() >= MAX_HOPS {
                continue;
            }
            self.tracing.push(stmt.start());
            let mut d = Deps::default();
            for v in values {
                d.merge(self.value(v, stmt.start()).whole);
            }
            d.merge(self.control_at(stmt.start()));
            self.tracing.pop();
            let hop = format!(
                "`{name}` written in place at line {} (`{}`)",
                self.line_of(stmt.start()),
                crate::syntax::expr::snippet(self.module.trimmed_line_at(stmt.start()).as_str())
            );
            let d = if into_part { d.through(via::CONTAINER) } else { d };
            out.merge(d.hop(&hop));
        }
        out
    }
}
