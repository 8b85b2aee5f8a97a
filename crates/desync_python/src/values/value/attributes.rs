//! Attributes and subscripts: `self.x`, `obj.attr`, `os.environ[...]`, `xs[rank]`.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Eval<'_, '_> {
    pub(crate) fn attribute(&mut self, e: &Expr, at: TextSize, depth: usize) -> Deps {
        let Expr::Attribute(a) = e else { return Deps::default() };
        match self.resolve(e, at) {
            Sym::Path(p) => {
                if let Some(d) = self.role_of_path(&p, e) {
                    return d;
                }
                // A module constant (`torch.float32`, `dist.ReduceOp.SUM`).
                if self.is_module_path(&a.value, at) {
                    return Deps::default();
                }
            }
            // `self.is_main` where `is_main` is a `@property` of the class.
            Sym::Function(f) => {
                if let Some(d) = self.property_value(&f) {
                    return d;
                }
            }
            Sym::Instance(_) | Sym::Class(_) | Sym::Module(_) | Sym::Unknown => {}
        }
        // `self.x`: as an earlier statement of this method leaves it, or else what the class
        // assigns to it.
        if let Expr::Name(n) = &*a.value
            && let Some(class) = self.self_class(n.id.as_str(), at)
        {
            if let Some(d) = self.attribute_as_it_stands(n.id.as_str(), a.attr.id.as_str(), at) {
                return d;
            }
            return self.class_attribute(class, a.attr.id.as_str(), e);
        }
        // A field of an object the project built, or what the whole value depends on. An
        // object held by another (`self.state.global_step`) is one whose fields were not kept
        // apart: what one of them depends on reaches this one only indirectly.
        let base = self.value_at(&a.value, at, depth + 1);
        let held = matches!(&*a.value, Expr::Attribute(_));
        if let Some(d) = base.field(a.attr.id.as_str()) {
            return d;
        }
        if !held && let Some(d) = self.field_the_class_sets(&a.value, a.attr.id.as_str(), &base, at)
        {
            return d;
        }
        base.field(a.attr.id.as_str()).unwrap_or_else(|| {
            if held {
                return base.whole.through(via::OBJECT);
            }
            let mut d = base.whole.field_of();
            // `engine.global_rank` of a parameter `engine`: which attribute was read goes to
            // the callers, who may know what `engine` is.
            if let Expr::Name(n) = &*a.value
                && d.params.iter().any(|p| p == n.id.as_str())
                && self.is_parameter(n)
            {
                d.members.push((n.id.to_string(), a.attr.id.to_string()));
            }
            d
        })
    }

    /// `obj.attr` of an object one of the project's classes built in view (`obj = Schedule(rank,
    /// epochs)`): what the class's methods assign to `self.attr`, with the constructor's
    /// parameters read from what the call passed. The object's other arguments do not reach
    /// that field: `schedule.total = epochs + warmup` does not depend on the rank the object
    /// was also given. A parameter of another method (`def resume(self, saved): self.first =
    /// saved[...]`) is whatever that method's calls pass, which the constructor call does not
    /// decide. `None` when the class assigns no such field (a field the table or a base class
    /// knows, a dynamic one): the whole object, as before.
    fn field_the_class_sets(
        &mut self,
        obj: &Expr,
        attr: &str,
        base: &Value,
        at: TextSize,
    ) -> Option<Deps> {
        if self.call_depth >= crate::values::MAX_CALL_DEPTH || base.fields.is_none() {
            return None;
        }
        let Sym::Instance(class) = self.resolve(obj, at) else { return None };
        let local = class.local?;
        let module = class.module.clone();
        let target: &Module = module.as_deref().unwrap_or(self.module);
        let classdef = crate::values::resolve::class_at(target, local)?;
        let mut there = Eval::new(self.cx, target, Scope::module(target), self.call_depth + 1);
        if !there.class_bases(classdef).is_empty() {
            // A framework base class may set the field itself (`self.trainer`).
            return None;
        }
        let (mut d, found) = there.attribute_of_class(classdef, attr, false);
        if !found || d.opaque.is_some() {
            return None;
        }
        let ctor = std::mem::take(&mut d.ctor_fields);
        d.params.clear();
        d.valued_params.clear();
        d.read_params.clear();
        d.field_params.clear();
        d.keyed_params.clear();
        d.keys.clear();
        d.members.clear();
        for p in ctor {
            if let Some(passed) = base.field(&p) {
                let hop = format!("the `{p}` {} was built with", self.quoted(obj));
                d.merge(passed.hop(&hop));
            }
        }
        Some(d)
    }

    /// What `arg.attribute` is here: a callee read that attribute of the parameter `arg` was
    /// passed for. What `arg` is (a framework object the table types, a project object built
    /// in view, a parameter of this function again) decides it.
    pub(crate) fn member_read(&mut self, arg: &Expr, attribute: &str, at: TextSize) -> Deps {
        let read = Expr::Attribute(ruff_python_ast::ExprAttribute {
            node_index: ruff_python_ast::AtomicNodeIndex::default(),
            range: arg.range(),
            value: Box::new(arg.clone()),
            attr: ruff_python_ast::Identifier::new(attribute, arg.range()),
            ctx: ruff_python_ast::ExprContext::Load,
        });
        if let Sym::Path(p) = self.resolve(&read, at)
            && let Some(api) = knowledge().api(&p)
        {
            let written = crate::syntax::expr::snippet(self.text(arg));
            let origin = format!("`{written}.{attribute}` (`{p}`)");
            return role_deps(api.role, origin);
        }
        self.attribute(&read, at, 0)
    }

    /// The dependence a table role gives to `e`, if the path names a row.
    pub(crate) fn role_of_path(&mut self, path: &str, e: &Expr) -> Option<Deps> {
        let api = knowledge().api(path)?;
        Some(role_deps(api.role, self.quoted(e)))
    }

    pub(crate) fn subscript(
        &mut self,
        e: &Expr,
        s: &ruff_python_ast::ExprSubscript,
        at: TextSize,
        depth: usize,
    ) -> Value {
        if let Sym::Path(p) = self.resolve(&s.value, at)
            && p == "os.environ"
        {
            return Value::of(self.environ(&s.slice, e));
        }
        let base = self.value_at(&s.value, at, depth + 1);
        // `state["iter_num"]` of a dict written out with that key: that entry's value only.
        if let Expr::StringLiteral(k) = &*s.slice
            && let Some(entry) = base.field(&entry_field(k.value.to_str()))
        {
            return Value::of(entry);
        }
        if let Expr::NumberLiteral(n) = &*s.slice
            && let Some(i) = n.value.as_int().and_then(ruff_python_ast::Int::as_usize)
            && base.elements.is_some()
        {
            return Value::of(base.element(i));
        }
        let mut out = base;
        out.elements = None;
        let mut index = self.value_at(&s.slice, at, depth + 1).whole;
        let picks = !matches!(&*s.slice, Expr::Slice(_));
        if picks && !is_literal_key(&s.slice) {
            // `h[mask]`, `x[order]`: the index's values pick the items (and for a mask, how
            // many), a computation from its contents.
            index = index.valued();
        }
        // `picked["step"]`: a field of the item under a key every rank uses, read as an
        // attribute is; under a key written out, a caller that passes a dict written out
        // decides it through that entry.
        if let Expr::StringLiteral(k) = &*s.slice {
            out.whole = out.whole.entry_of(k.value.to_str());
        } else if picks && index.reasons.is_empty() && index.params.is_empty() {
            out.whole = out.whole.read_of();
        }
        out.whole.merge(if picks { index.through(via::PICKED) } else { index });
        out
    }

    /// `os.environ["LOCAL_RANK"]`: the rank; `os.environ["WORLD_SIZE"]`: the same everywhere;
    /// anything else: the host's environment, decided by the caller when a parameter names the
    /// variable ([`Reason::key_param`](crate::values::Reason)).
    pub(crate) fn environ(&self, key: &Expr, e: &Expr) -> Deps {
        let origin = self.quoted(e);
        match key {
            Expr::StringLiteral(k) => environ_variable(k.value.to_str(), origin),
            Expr::Name(n) if self.is_parameter(n) => {
                let mut d = Deps::reason(Environment, origin);
                d.reasons[0].key_param = Some(n.id.to_string());
                d
            }
            _ => Deps::reason(Environment, origin),
        }
    }

    /// Whether `n`, where it is written, is a parameter of the function in scope.
    pub(crate) fn is_parameter(&self, n: &ruff_python_ast::ExprName) -> bool {
        bindings::lookup(self.module, self.scope, n.id.as_str(), n.start())
            .is_some_and(|b| matches!(b.source, Source::Parameter))
    }

    /// A call's argument for the parameter that names an environment variable the callee reads
    /// (`reason`): the rank for `"LOCAL_RANK"`, nothing for `"WORLD_SIZE"`, the caller's own
    /// parameter when it passes one on, the environment otherwise.
    pub(crate) fn environ_argument(
        &self,
        mut reason: crate::values::Reason,
        arg: Option<&Expr>,
        hop: &str,
    ) -> Deps {
        reason.key_param = None;
        match arg {
            Some(Expr::StringLiteral(k)) => {
                let named = environ_variable(k.value.to_str(), reason.origin.clone());
                let Some(r) = named.reasons.into_iter().next() else { return Deps::default() };
                reason.kind = r.kind;
            }
            Some(Expr::Name(n)) if self.is_parameter(n) => {
                reason.key_param = Some(n.id.to_string());
            }
            _ => {}
        }
        Deps { reasons: vec![reason], ..Deps::default() }.hop(hop)
    }
}
