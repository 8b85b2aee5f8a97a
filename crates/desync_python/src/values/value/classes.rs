//! Classes: `self` and `cls`, class attributes, bases, and a summary applied to one call.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<'m> Eval<'_, 'm> {
    /// The class whose instance `name` is, when it is `self` of a method (or `cls`).
    pub(crate) fn self_class(
        &mut self,
        name: &str,
        at: TextSize,
    ) -> Option<&'m ruff_python_ast::StmtClassDef> {
        let def = self.scope.function?;
        if crate::syntax::tree::first_parameter(def)? != name {
            return None;
        }
        let binding = bindings::lookup(self.module, self.scope, name, at)?;
        if !matches!(binding.source, Source::Parameter) {
            return None;
        }
        crate::values::resolve::class_of(self.module, def)
    }

    /// What the methods of `class` assign to `self.<attr>`.
    pub(crate) fn class_attribute(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
        e: &Expr,
    ) -> Deps {
        // A framework attribute of the base class (`self.trainer`, `self.global_rank`).
        for base in self.class_bases(class) {
            let path = format!("{base}.{attr}");
            if let Some(d) = self.role_of_path(&path, e) {
                return d;
            }
        }
        let (mut out, found) = self.attribute_of_class(class, attr, false);
        if !found {
            out.opaque = Some(format!("{} (not assigned in the class)", self.quoted(e)));
        }
        out
    }

    /// The length of `self.<attr>` (a loader the class builds in a setup method): the lengths
    /// of what its methods assign to it; `None` when none does.
    pub(crate) fn class_attribute_length(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
    ) -> Option<Deps> {
        let (out, found) = self.attribute_of_class(class, attr, true);
        found.then_some(out)
    }

    /// [`Self::assigned_attribute`], memoised per analysis.
    pub(crate) fn attribute_of_class(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
        length: bool,
    ) -> (Deps, bool) {
        let key = (crate::values::key_of(self.module), class.start(), attr.to_owned(), length);
        let known = self.cx.attributes.borrow().get(&key).cloned();
        if let Some(known) = known {
            return known;
        }
        let computed = self.assigned_attribute(class, attr, length);
        self.cx.attributes.borrow_mut().insert(key, computed.clone());
        computed
    }

    /// What the assignments `self.<attr> = value` in the methods of `class` depend on (or, with
    /// `length`, what their lengths depend on), and whether there is any.
    pub(crate) fn assigned_attribute(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
        length: bool,
    ) -> (Deps, bool) {
        let mut out = Deps::default();
        let mut found = false;
        for stmt in &class.body {
            let Stmt::FunctionDef(method) = stmt else { continue };
            let Some(self_name) = crate::syntax::tree::first_parameter(method) else { continue };
            let scope = Scope { function: Some(method), suite: &method.body };
            let mut assigned: Vec<(&'m Expr, &'m Stmt)> = Vec::new();
            crate::syntax::tree::walk_scope(&method.body, &mut |s, _| {
                let (targets, value): (Vec<&Expr>, Option<&Expr>) = match s {
                    Stmt::Assign(a) => (a.targets.iter().collect(), Some(&*a.value)),
                    Stmt::AnnAssign(a) => (vec![&*a.target], a.value.as_deref()),
                    Stmt::AugAssign(a) => (vec![&*a.target], Some(&*a.value)),
                    _ => return,
                };
                let Some(value) = value else { return };
                for t in targets {
                    if let Expr::Attribute(ta) = t
                        && ta.attr.id.as_str() == attr
                        && matches!(&*ta.value, Expr::Name(n) if n.id.as_str() == self_name)
                    {
                        assigned.push((value, s));
                    }
                }
            });
            for (value, stmt) in assigned {
                let at = stmt.start();
                found = true;
                let outer = std::mem::replace(&mut self.scope, scope);
                let foreign = self.foreign.take();
                // `self.retries += 1` past `if RANK != -1: raise`: never where there are peers.
                let module: &'m Module = self.module;
                if self.single_process_only(module, stmt) {
                    self.foreign = foreign;
                    self.scope = outer;
                    continue;
                }
                if !self.tracing.contains(&at) && self.tracing.len() < MAX_HOPS {
                    self.tracing.push(at);
                    let hop = format!(
                        "`self.{attr}` = {} (line {})",
                        quote(self.module.text(value.range())),
                        self.line_of(at)
                    );
                    let mut d = if length {
                        self.length(value, at)
                    } else {
                        self.assigned(value, at).whole
                    };
                    // `self.rank = rank` in `__init__`: what the constructor call passed.
                    if !length && method.name.id.as_str() == "__init__" {
                        d.ctor_fields.extend(d.params.iter().filter(|p| **p != self_name).cloned());
                    }
                    out.merge(d.hop(&hop));
                    self.tracing.pop();
                }
                self.foreign = foreign;
                self.scope = outer;
            }
        }
        // A field a hook of the class fills holds what this rank's own modules produced, and
        // as many items as they ran.
        if let Some(evidence) = written_by_hook(self.module, class, attr) {
            found = true;
            out.merge(Deps::reason(LocalData, evidence));
        }
        (out, found)
    }

    /// Qualified names of the framework classes `class` derives from (through the file's own
    /// classes too).
    pub(crate) fn class_bases(&mut self, class: &'m ruff_python_ast::StmtClassDef) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_bases(class, &mut out, 0);
        out
    }

    pub(crate) fn collect_bases(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        out: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 8 {
            return;
        }
        for base in class.bases() {
            match self.resolve(base, class.start()) {
                Sym::Path(p) => out.push(p),
                Sym::Class(ClassRef { local: Some(def_at), module: None, .. }) => {
                    if let Some(inner) = crate::values::resolve::class_at(self.module, def_at) {
                        self.collect_bases(inner, out, depth + 1);
                    }
                }
                Sym::Class(ClassRef { qualified: Some(q), .. }) => out.push(q),
                _ => {}
            }
        }
    }

    /// Turns a project function's summary into the dependence of one call of it: parameters
    /// become what the call passes.
    pub(crate) fn apply(
        &mut self,
        summary: &crate::values::Summary,
        f: &FnRef,
        c: &ExprCall,
        at: TextSize,
        pick: impl Fn(&crate::values::Summary) -> Value,
    ) -> Value {
        pick(summary).map(|d| self.substitute(d, summary, f, c, at))
    }

    /// Replaces a summary's parameters by the dependence of the arguments passed for them.
    pub(crate) fn substitute(
        &mut self,
        mut d: Deps,
        summary: &crate::values::Summary,
        f: &FnRef,
        c: &ExprCall,
        at: TextSize,
    ) -> Deps {
        let members: Vec<(String, Vec<String>)> =
            d.params.iter().map(|p| (p.clone(), d.members_of(p))).collect();
        d.members.clear();
        let params = std::mem::take(&mut d.params);
        let structure_only = std::mem::take(&mut d.structure_only);
        let indirect_params = std::mem::take(&mut d.indirect_params);
        let read_params = std::mem::take(&mut d.read_params);
        let valued_params = std::mem::take(&mut d.valued_params);
        let field_params = std::mem::take(&mut d.field_params);
        let keyed = std::mem::take(&mut d.keyed_params);
        let keys = std::mem::take(&mut d.keys);
        let length_params = std::mem::take(&mut d.length_params);
        let name = summary.name.clone();
        let (named, reasons): (Vec<_>, Vec<_>) =
            std::mem::take(&mut d.reasons).into_iter().partition(|r| r.key_param.is_some());
        d.reasons = reasons;
        for reason in named {
            let p = reason.key_param.clone().unwrap_or_default();
            let arg = argument_for(&summary.parameters, f.is_method, c, &p);
            let hop = match arg {
                Some(arg) => format!(
                    "`{p}` = {} in the call of `{name}` (line {})",
                    self.quoted(arg),
                    self.line_of(c.start())
                ),
                None => format!("`{p}` left to its default in the call of `{name}`"),
            };
            d.merge(self.environ_argument(reason, arg, &hop));
        }
        for p in params {
            if let Some(arg) = argument_for(&summary.parameters, f.is_method, c, &p) {
                let hop = format!(
                    "`{p}` = {} in the call of `{name}` (line {})",
                    self.quoted(arg),
                    self.line_of(c.start())
                );
                // `def leads(engine): return engine.global_rank == 0` called with the engine
                // a framework factory returned: the attributes read, as this caller sees them.
                let read: &[String] =
                    members.iter().find(|(q, _)| *q == p).map_or(&[], |(_, a)| a.as_slice());
                if !read.is_empty() && !keyed.contains(&p) && !structure_only.contains(&p) {
                    for attribute in read {
                        let hop = format!(
                            "`{p}.{attribute}` with `{p}` = {} in the call of `{name}` (line {})",
                            self.quoted(arg),
                            self.line_of(c.start())
                        );
                        let v = self.member_read(arg, attribute, at);
                        let v = if indirect_params.contains(&p) {
                            v.through(via::CONTAINER)
                        } else {
                            v
                        };
                        d.merge(v.hop(&hop));
                    }
                    continue;
                }
                let passed = self.value(arg, at);
                let entries: Option<Vec<Deps>> = keyed
                    .contains(&p)
                    .then(|| {
                        keys.iter()
                            .filter(|(q, _)| *q == p)
                            .map(|(_, k)| passed.field(&entry_field(k)))
                            .collect::<Option<Vec<Deps>>>()
                    })
                    .flatten();
                let keyed_entries = entries.is_some();
                let mut v = match entries {
                    // `f(state)` with `state = {"iter_num": 0, ...}`: the entries read.
                    Some(entries) => entries.into_iter().fold(Deps::default(), |mut acc, e| {
                        acc.merge(e);
                        acc
                    }),
                    None => passed.whole,
                };
                if structure_only.contains(&p) {
                    v = crate::values::condition::structural(v);
                    v.structure_only.clone_from(&v.params);
                }
                if indirect_params.contains(&p) {
                    v = v.through(via::CONTAINER);
                }
                if valued_params.contains(&p) {
                    v = v.valued();
                }
                if keyed_entries {
                    // The entries themselves were read, not what the dict holds.
                } else if field_params.contains(&p) {
                    v = v.field_of();
                } else if read_params.contains(&p) {
                    v = v.read_of();
                }
                d.merge(v.hop(&hop));
            } else if f.is_method
                && summary.parameters.first() == Some(&p)
                && let Expr::Attribute(a) = &*c.func
            {
                let v = self.value(&a.value, at).whole;
                d.merge(v);
            }
        }
        // The fields of the receiver the method reads: what its constructor call passed, when
        // the object was built in view; a call through the caller's own object leaves them to
        // whoever built that one.
        let ctor_fields = std::mem::take(&mut d.ctor_fields);
        if f.is_method
            && !ctor_fields.is_empty()
            && let Expr::Attribute(a) = &*c.func
        {
            let own =
                matches!(&*a.value, Expr::Name(n) if self.self_class(n.id.as_str(), at).is_some());
            if own {
                d.ctor_fields = ctor_fields;
            } else {
                let receiver = self.value(&a.value, at);
                for field in ctor_fields {
                    if let Some(built) = receiver.field(&field) {
                        let hop = format!(
                            "the `{field}` {} was built with (line {})",
                            self.quoted(&*a.value),
                            self.line_of(c.start())
                        );
                        d.merge(built.hop(&hop));
                    }
                }
            }
        }
        for p in length_params {
            if let Some(arg) = argument_for(&summary.parameters, f.is_method, c, &p) {
                let hop = format!(
                    "the length of `{p}` = {} in the call of `{name}` (line {})",
                    self.quoted(arg),
                    self.line_of(c.start())
                );
                let v = self.length(arg, at);
                d.merge(v.hop(&hop));
            }
        }
        d
    }
}
