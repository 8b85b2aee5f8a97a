//! Models a table wrapper made (`DDP(model)`, `fully_shard(model)`), followed through
//! assignments, `self` attributes, annotations (`model: DDP`), the project's functions that
//! return one (`model = build(local_rank)`) and the arguments callers in view pass for a
//! parameter; and values such a model computed (`loss = criterion(model(x), y)`), whose
//! `.backward()` runs the wrapper's gradient collectives.

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

use super::Collectives;
use super::callers::{CallOf, function_scope};
use crate::names::bindings::{self, Binding, Source};
use crate::names::knowledge::{Role, knowledge};
use crate::syntax::module::Module;
use crate::syntax::tree;
use crate::values::resolve::{ClassRef, FnRef, Sym, def_at};
use crate::values::value::Eval;

/// How many bindings, returns and callers deep a model is followed.
const MAX_WRAP_DEPTH: usize = 12;

/// Methods of `nn.Module` that return the module itself.
const RETURNS_SELF: &[&str] = &["to", "cuda", "cpu", "train", "eval", "half", "float", "bfloat16"];

impl Collectives<'_, '_> {
    /// The wrapper (qualified) that made the model `e` evaluates to, if any.
    pub(super) fn wrapped(
        &self,
        eval: &mut Eval<'_, '_>,
        e: &Expr,
        at: TextSize,
        depth: usize,
    ) -> Option<String> {
        if depth > MAX_WRAP_DEPTH {
            return None;
        }
        if let Sym::Instance(ClassRef { qualified: Some(q), .. }) = eval.resolve(e, at)
            && is_wrapper(&q)
        {
            return Some(q);
        }
        match e {
            Expr::Name(n) => {
                let binding = bindings::lookup(eval.module, eval.scope, n.id.as_str(), at)?;
                if let Some(w) = Self::wrapped_in_place(eval, n.id.as_str(), &binding, at) {
                    return Some(w);
                }
                self.wrapped_binding(eval, n.id.as_str(), &binding, depth)
            }
            Expr::Call(c) => match eval.resolve(&c.func, at) {
                Sym::Path(p) if is_wrapper(&p) => Some(p),
                Sym::Function(f) => self.returns_wrapped(eval.module, &f, depth + 1),
                _ => match &*c.func {
                    Expr::Attribute(a) if RETURNS_SELF.contains(&a.attr.id.as_str()) => {
                        self.wrapped(eval, &a.value, at, depth + 1)
                    }
                    _ => None,
                },
            },
            _ => None,
        }
    }

    fn wrapped_binding<'m>(
        &self,
        eval: &mut Eval<'_, 'm>,
        name: &str,
        binding: &Binding<'m>,
        depth: usize,
    ) -> Option<String> {
        match binding.source {
            Source::Value(v) => {
                let scope = scope_of(binding);
                let outer = std::mem::replace(&mut eval.scope, scope);
                let w = self.wrapped(eval, v, binding.at, depth + 1);
                eval.scope = outer;
                w
            }
            Source::Parameter => {
                let def = binding.scope.function?;
                self.passed(eval.module, def, name, false, |call, caller, arg| {
                    self.wrapped(caller, arg, call.call.start(), depth + 1)
                })
            }
            _ => None,
        }
    }

    /// `fully_shard(model)` / `replicate(model)` earlier in the scope wraps `model` in place.
    fn wrapped_in_place(
        eval: &mut Eval<'_, '_>,
        name: &str,
        binding: &Binding<'_>,
        at: TextSize,
    ) -> Option<String> {
        let mut found = None;
        let mut calls = Vec::new();
        tree::walk_scope(eval.scope.suite, &mut |stmt, _| {
            if let Stmt::Expr(s) = stmt
                && let Expr::Call(c) = &*s.value
                && stmt.start() >= binding.effective
                && stmt.end() <= at
                && matches!(c.arguments.args.first(), Some(Expr::Name(n)) if n.id.as_str() == name)
            {
                calls.push(c);
            }
        });
        for c in calls {
            if let Sym::Path(p) = eval.resolve(&c.func, c.start())
                && is_wrapper(&p)
            {
                found = Some(p);
            }
        }
        found
    }

    /// Whether the project function `f` returns a wrapped model.
    fn returns_wrapped(&self, module: &Module, f: &FnRef, depth: usize) -> Option<String> {
        if depth > MAX_WRAP_DEPTH {
            return None;
        }
        let target: &Module = f.module.as_deref().unwrap_or(module);
        let def = def_at(target, f.def)?;
        let mut returns = Vec::new();
        tree::walk_scope(&def.body, &mut |stmt, _| {
            if let Stmt::Return(r) = stmt
                && let Some(v) = &r.value
            {
                returns.push(&**v);
            }
        });
        let mut eval = Eval::new(self.cx, target, function_scope(def), 0);
        returns.into_iter().find_map(|v| self.wrapped(&mut eval, v, v.start(), depth + 1))
    }

    /// The wrapper whose model computed (part of) the value of `e`: `criterion(model(x), y)`,
    /// `model(x).loss`, `compute_loss(model, batch)` (a call given the model), `loss / n`.
    pub(super) fn flows_from_wrapped(
        &self,
        eval: &mut Eval<'_, '_>,
        e: &Expr,
        at: TextSize,
        depth: usize,
    ) -> Option<String> {
        if depth > MAX_WRAP_DEPTH {
            return None;
        }
        match e {
            Expr::Call(c) => {
                if let Some(w) = self.wrapped(eval, &c.func, at, depth + 1) {
                    return Some(w);
                }
                let args =
                    c.arguments.args.iter().chain(c.arguments.keywords.iter().map(|k| &k.value));
                for arg in args {
                    if let Some(w) = self
                        .wrapped(eval, arg, at, depth + 1)
                        .or_else(|| self.flows_from_wrapped(eval, arg, at, depth + 1))
                    {
                        return Some(w);
                    }
                }
                match &*c.func {
                    Expr::Attribute(a) => self.flows_from_wrapped(eval, &a.value, at, depth + 1),
                    _ => None,
                }
            }
            Expr::Name(n) => {
                let binding = bindings::lookup(eval.module, eval.scope, n.id.as_str(), at)?;
                match binding.source {
                    Source::Value(v)
                    | Source::Augmented(v)
                    | Source::Element(v, _)
                    | Source::WithItem(v) => {
                        let outer = std::mem::replace(&mut eval.scope, scope_of(&binding));
                        let w = self.flows_from_wrapped(eval, v, binding.at, depth + 1);
                        eval.scope = outer;
                        w
                    }
                    Source::Parameter => {
                        let def = binding.scope.function?;
                        let name = n.id.as_str();
                        self.passed(eval.module, def, name, true, |call, caller, arg| {
                            self.flows_from_wrapped(caller, arg, call.call.start(), depth + 1)
                        })
                    }
                    _ => None,
                }
            }
            Expr::Attribute(a) => self.flows_from_wrapped(eval, &a.value, at, depth + 1),
            Expr::Subscript(s) => self.flows_from_wrapped(eval, &s.value, at, depth + 1),
            Expr::BinOp(b) => self
                .flows_from_wrapped(eval, &b.left, at, depth + 1)
                .or_else(|| self.flows_from_wrapped(eval, &b.right, at, depth + 1)),
            Expr::UnaryOp(u) => self.flows_from_wrapped(eval, &u.operand, at, depth + 1),
            _ => None,
        }
    }
}

impl Collectives<'_, '_> {
    /// The first wrapper `each` finds in what the calls of `def` pass for `name`, memoised
    /// per (function, parameter, question); a question already being answered (recursion
    /// through callers) answers `None`.
    fn passed<'m>(
        &self,
        module: &'m Module,
        def: &'m ruff_python_ast::StmtFunctionDef,
        name: &str,
        computed: bool,
        mut each: impl FnMut(&CallOf<'m>, &mut Eval<'_, 'm>, &'m Expr) -> Option<String>,
    ) -> Option<String> {
        let key = ((crate::values::key_of(module), def.start()), name.to_owned(), computed);
        if let Some(hit) = self.params.borrow().get(&key) {
            return hit.clone();
        }
        self.params.borrow_mut().insert(key.clone(), None);
        let found = self.calls_of(module, def).into_iter().find_map(|call| {
            let arg = call.argument(name)?;
            let mut caller = Eval::new(self.cx, module, call.scope, 0);
            each(&call, &mut caller, arg)
        });
        self.params.borrow_mut().insert(key, found.clone());
        found
    }
}

/// The scope a binding lives in.
fn scope_of<'m>(binding: &Binding<'m>) -> crate::names::bindings::Scope<'m> {
    binding.scope
}

fn is_wrapper(qualified: &str) -> bool {
    knowledge().api(qualified).is_some_and(|a| a.role == Role::Wrapper)
}
