//! The origin of a differing value. A metadata mismatch (the same call, another size or dtype
//! on some ranks) is seen at the collective's call, but the call only passes on what was
//! decided earlier: `dist.all_reduce(buf)` with `buf = flat.to(dtype)`, `dtype` an attribute
//! the constructor stored from an argument its caller computed with a helper that chose
//! `torch.bfloat16` from the host's CPU flags. The line to show is the helper's choice.
//!
//! The argument is followed backwards, one step at a time, through what only carries the
//! value along: names and their assignments, parameters into the call on the frame outside
//! (the stack says which call; a method called through its class or an instance, as a module's
//! `forward` or an autograd `Function`'s, takes the receiver or context first), attributes of
//! `self` into the constructor call that built the object, calls of the project's functions
//! into their `return`s, conversions that keep what is carried (`.to(dtype)` carries the dtype
//! argument, `.tolist()` the values). It stops at the first step that *decides* the value: a
//! choice (`a if test else b`) whose test differs across ranks, or, for sizes, a computation
//! (`counts.clamp(max=capacity)`, `n_tokens * 2`) of operands that differ. Whether something
//! differs is [`Analysis::dependence`], with the parameters it reaches resolved in the same
//! callers. Only paths that differ are followed; nothing is claimed past what is in view.
//!
//! Length: about 715 lines of code (one walk across frames) and 315 of tests.

use std::sync::Arc;

use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::resolve::{Sym, class_of, def_at};
use super::value::{Eval, argument_for};
use super::{Analysis, Deps, via};
use crate::names::bindings::{self, Scope, Source};
use crate::syntax::module::Module;
use crate::syntax::types::Dependence;

/// Steps followed at most, over every path tried.
const MAX_STEPS: usize = 64;
/// How far "does it differ" follows parameters outward.
const MAX_CALLER_DEPTH: usize = 8;
/// Methods (torch 2.11 tensors, Python lists) whose result carries the receiver's values and
/// sizes on: following a size, the origin is further back.
const KEEPS_VALUES: &[&str] = &[
    "tolist",
    "contiguous",
    "clone",
    "detach",
    "cpu",
    "cuda",
    "to",
    "view_as",
    "long",
    "int",
    "float",
    "item",
    "copy",
];
/// Tensor factories (torch 2.11) whose result has their first argument's size: the size is
/// decided where that argument's was (`torch.empty_like(local)` for an `all_gather`'s outputs).
const SAME_SIZE_AS_ARGUMENT: &[&str] = &[
    "torch.empty_like",
    "torch.zeros_like",
    "torch.ones_like",
    "torch.full_like",
    "torch.rand_like",
    "torch.randn_like",
    "torch.randint_like",
];
/// Tensor factories (torch 2.11) whose positional arguments are the result's size: following a
/// size, `torch.zeros(rows, width)` only allocates what `rows` decided.
const SIZE_FROM_ARGUMENTS: &[&str] =
    &["torch.empty", "torch.zeros", "torch.ones", "torch.rand", "torch.randn", "torch.arange"];
/// Tensor methods (torch 2.11) whose positional arguments are the new tensor's size.
const SIZE_FROM_ARGUMENTS_METHODS: &[&str] = &["new_empty", "new_zeros", "new_ones"];
/// Reads of a value's size: `x.numel()`, `x.size(0)`; with `x.shape[...]` and `len(x)`
/// (see [`sized_value`]) the size is what `x`'s was.
const SIZE_READ_METHODS: &[&str] = &["numel", "size", "dim"];
/// Tensor methods that cast to a fixed dtype: the dtype is decided here, alike on every rank.
const FIXED_CASTS: &[&str] = &["half", "float", "bfloat16", "double", "long", "int", "bool"];
/// Tensor methods whose dtype argument decides the result's dtype.
const DTYPE_SETTERS: &[&str] = &["to", "type"];

/// What of the collective's tensor differs across ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// Its size (or the split sizes that decide it).
    Size,
    Dtype,
}

/// Where a value a collective carries was decided ([`Analysis::value_origin`]).
#[derive(Debug, Clone)]
pub struct ValueOrigin {
    pub module: Arc<Module>,
    pub line: u32,
    pub function: Option<String>,
    /// The line, trimmed.
    pub source: String,
    /// The expression that decides: the choice's test, or the computation.
    pub decided_by: String,
    /// A choice between values (`a if test else b`), not a computation.
    pub choice: bool,
    /// Why what decides differs across ranks.
    pub dependence: Vec<Dependence>,
    /// How the collective's argument gets there, from the call outward: "`buf` = … (line 31)".
    pub path: Vec<String>,
}

/// A function (or the module) being looked at, and the call on the frame outside that entered
/// it, when known.
struct Place {
    module: Arc<Module>,
    /// Start of the `def`; `None` at module level.
    def: Option<TextSize>,
    caller: Option<Caller>,
}

#[derive(Clone, Copy)]
struct Caller {
    place: usize,
    /// Start of the call expression in the caller's module.
    call: TextSize,
    /// The function's first parameter is the receiver (or context), not an argument.
    receiver_first: bool,
    /// Called through an instance (`obj(x)`, `obj.method(x)`): its constructor call decides
    /// what `__init__` stored.
    through_instance: bool,
}

/// One of the user's frames of a stack, for [`Analysis::value_origin`].
#[derive(Debug, Clone)]
pub struct OriginFrame {
    pub module: Arc<Module>,
    pub line: u32,
    /// Nothing but the library's call dispatch stands between this frame and the next
    /// (outer) one on the stack ([`crate::names::knowledge::Knowledge::dispatches_call`]): the outer
    /// line's call entered this frame, even a call of a value nothing in view types.
    pub called_from_outer: bool,
}

impl Analysis<'_> {
    /// Where the value the collective call at `frames[0]` carries (its size or dtype) was
    /// decided from something that differs across ranks. `frames` are the user's frames of the
    /// stack, innermost first. `None` when no such line is in view.
    pub fn value_origin(&self, frames: &[OriginFrame], carried: Carried) -> Option<ValueOrigin> {
        let OriginFrame { module, line, .. } = frames.first()?;
        let places = stack_places(self, frames);
        let mut walk = Walk {
            cx: self,
            places,
            carried,
            steps: 0,
            path: Vec::new(),
            element: None,
            helpers: Vec::new(),
        };
        let call = crate::syntax::module::call_at(module, *line)?;
        // The dtype setting keyword and the split sizes come last in the call but decide what
        // is carried; every argument is tried, keywords first.
        let arguments: Vec<&Expr> = call
            .arguments
            .keywords
            .iter()
            .map(|k| &k.value)
            .chain(call.arguments.args.iter())
            .collect();
        arguments.into_iter().find_map(|a| {
            walk.differs(0, a, call.start(), 0)?;
            walk.path.clear();
            walk.value(0, a, call.start())
        })
    }
}

/// The places of the stack's frames, each entered by the call on the next frame's line.
fn stack_places(cx: &Analysis<'_>, frames: &[OriginFrame]) -> Vec<Place> {
    let mut places: Vec<Place> = frames
        .iter()
        .map(|f| {
            let def = f.module.path(f.line).and_then(|p| p.innermost_function(&f.module));
            Place { module: f.module.clone(), def: def.map(Ranged::start), caller: None }
        })
        .collect();
    for i in 0..frames.len().saturating_sub(1) {
        let callee = places[i].module.clone();
        let Some(def) = places[i].def.and_then(|d| def_at(&callee, d)) else { break };
        let outer = &frames[i + 1];
        let Some(caller) =
            call_of(cx, &callee, def, &outer.module, outer.line, frames[i].called_from_outer)
        else {
            break;
        };
        places[i].caller = Some(Caller { place: i + 1, ..caller });
    }
    places
}

/// The call on `line` of `outer` that runs `def` of `callee`: one naming it, or, for a method,
/// one through its class or an instance of it (`Layer.apply(...)` runs an autograd
/// `Function`'s `forward`, `layer(x)` a module's); when the stack shows that the line called
/// it (`called`), the line's only call of a value nothing in view types.
fn call_of(
    cx: &Analysis<'_>,
    callee: &Module,
    def: &StmtFunctionDef,
    outer: &Module,
    line: u32,
    called: bool,
) -> Option<Caller> {
    let calls = outer.calls_at(line);
    let class = class_of(callee, def);
    let named = calls
        .iter()
        .find(|c| crate::syntax::expr::last_segment(&c.func) == Some(def.name.id.as_str()));
    if let Some(c) = named {
        let through_instance = class.is_some() && matches!(&*c.func, Expr::Attribute(_));
        return Some(Caller {
            place: 0,
            call: c.start(),
            receiver_first: through_instance,
            through_instance,
        });
    }
    let mut eval = Eval::new(cx, outer, Scope::at(outer, line), 0);
    if let Some(class) = class {
        let is_this_class = |r: &super::resolve::ClassRef| {
            let home: &Module = r.module.as_deref().unwrap_or(outer);
            std::ptr::eq(home, callee) && r.local == Some(class.start())
        };
        let through_class = calls.iter().find_map(|c| {
            let through_instance = match eval.resolve(&c.func, c.start()) {
                Sym::Instance(r) if is_this_class(&r) => true,
                _ => match &*c.func {
                    Expr::Attribute(a) => match eval.resolve(&a.value, c.start()) {
                        Sym::Class(r) if is_this_class(&r) => false,
                        Sym::Instance(r) if is_this_class(&r) => true,
                        _ => return None,
                    },
                    _ => return None,
                },
            };
            Some(Caller { place: 0, call: c.start(), receiver_first: true, through_instance })
        });
        if through_class.is_some() {
            return through_class;
        }
    }
    // A call of a value nothing in view types (`model(batch)` with `model` a parameter): the
    // stack shows this line entered the function (nothing but `nn.Module.__call__` between
    // them), so when it is the line's only such call it is the one. Called as a value, a
    // method's receiver is already bound. (With other library code between them, as a
    // framework's loop calling the user's hook, the line's call entered the library.)
    if !called {
        return None;
    }
    let mut untyped = calls.iter().filter(|c| {
        matches!(&*c.func, Expr::Name(_) | Expr::Attribute(_))
            && matches!(eval.resolve(&c.func, c.start()), Sym::Unknown)
    });
    let only = untyped.next()?;
    if untyped.next().is_some() {
        return None;
    }
    let method = class.is_some();
    Some(Caller { place: 0, call: only.start(), receiver_first: method, through_instance: method })
}

/// The call starting at `at` in `module`.
fn call_starting(module: &Module, at: TextSize) -> Option<&ExprCall> {
    module.calls_at(module.line_of(at)).into_iter().find(|c| c.start() == at)
}

fn parameter_names(def: &StmtFunctionDef) -> Vec<String> {
    def.parameters.iter_non_variadic_params().map(|p| p.parameter.name.id.to_string()).collect()
}

struct Walk<'c, 'p> {
    cx: &'c Analysis<'p>,
    places: Vec<Place>,
    carried: Carried,
    steps: usize,
    path: Vec<String>,
    /// The walk follows element `i` of the value it is about to enter (`seen, rows =
    /// pool.plan(keys)` follows `rows`): a project function's `return a, b` gives that element.
    element: Option<usize>,
    /// Places the walk entered through a call of one of the project's functions (not the
    /// stack's frames): a computation there that differs only through its parameters carries
    /// its caller's arguments, it decides nothing itself.
    helpers: Vec<usize>,
}

impl Walk<'_, '_> {
    fn place_at(
        &mut self,
        module: &Arc<Module>,
        def: Option<TextSize>,
        caller: Option<Caller>,
    ) -> usize {
        if let Some(i) = self.places.iter().position(|p| {
            Arc::ptr_eq(&p.module, module)
                && p.def == def
                && p.caller.map(|c| c.call) == caller.map(|c| c.call)
        }) {
            return i;
        }
        self.places.push(Place { module: module.clone(), def, caller });
        self.places.len() - 1
    }

    fn scope<'m>(&self, place: usize, module: &'m Module) -> Scope<'m> {
        Scope::of(module, self.places[place].def.and_then(|d| def_at(module, d)))
    }

    /// What differs across ranks in `e` at `place`, its parameters (and the fields its
    /// object's constructor stored) resolved in the callers; `None` when nothing shown does.
    fn differs(
        &mut self,
        place: usize,
        e: &Expr,
        at: TextSize,
        depth: usize,
    ) -> Option<Vec<Dependence>> {
        Some(self.differing(place, e, at, depth, false)?.to_public())
    }

    /// [`Self::differs`], as the reasons shown: each with the way from `e` out to its source,
    /// the arguments that carried it into the frames inside included. `valued`: `e` is passed
    /// for a parameter whose values a computation inside reads ([`Deps::valued`]), so what
    /// reaches only its contents decides.
    fn differing(
        &mut self,
        place: usize,
        e: &Expr,
        at: TextSize,
        depth: usize,
        valued: bool,
    ) -> Option<Deps> {
        if depth > MAX_CALLER_DEPTH {
            return None;
        }
        let module = self.places[place].module.clone();
        let scope = self.scope(place, &module);
        let mut deps = Eval::new(self.cx, &module, scope, 0).value(e, at).whole;
        if valued {
            deps = deps.valued();
        }
        let mut shown = deps.clone();
        shown.reasons.retain(|r| r.via & via::INDIRECT == 0);
        if !shown.reasons.is_empty() {
            return Some(Deps { reasons: shown.reasons, ..Deps::default() });
        }
        let own: Vec<String> =
            deps.params.iter().filter(|p| !deps.ctor_fields.contains(p)).cloned().collect();
        for p in own {
            let valued = deps.valued_params.contains(&p);
            if let Some(found) = self.with_argument(place, &p, &mut |w, outer, arg, at| {
                let found = w.differing(outer, arg, at, depth + 1, valued)?;
                let outer_module = &w.places[outer].module;
                Some(found.hop(&format!(
                    "`{p}` = {} (passed at {}:{})",
                    super::quote(outer_module.text(arg.range())),
                    file_name(outer_module),
                    outer_module.line_of(at)
                )))
            }) {
                return Some(found);
            }
        }
        for field in deps.ctor_fields.clone() {
            if let Some(found) =
                self.with_constructor_argument(place, &field, &mut |w, outer, arg, at| {
                    w.differing(outer, arg, at, depth + 1, false)
                })
            {
                return Some(found);
            }
        }
        None
    }

    /// `f` on the argument the call entering `place` passes for parameter `name`.
    fn with_argument<R>(
        &mut self,
        place: usize,
        name: &str,
        f: &mut dyn FnMut(&mut Self, usize, &Expr, TextSize) -> Option<R>,
    ) -> Option<R> {
        let caller = self.places[place].caller?;
        let module = self.places[place].module.clone();
        let def = def_at(&module, self.places[place].def?)?;
        let outer = self.places[caller.place].module.clone();
        let call = call_starting(&outer, caller.call)?;
        let arg = argument_for(&parameter_names(def), caller.receiver_first, call, name)?;
        f(self, caller.place, arg, call.start())
    }

    /// `f` on the argument for `__init__`'s parameter `name` in the constructor call that
    /// built the object the call entering `place` went through (`avg = Averager(..., dtype)`,
    /// then `avg(step)`).
    fn with_constructor_argument<R>(
        &mut self,
        place: usize,
        name: &str,
        f: &mut dyn FnMut(&mut Self, usize, &Expr, TextSize) -> Option<R>,
    ) -> Option<R> {
        let (built, built_place) = self.constructor_of(place)?;
        let outer = self.places[built_place].module.clone();
        let call = call_starting(&outer, built)?;
        let module = self.places[place].module.clone();
        let def = def_at(&module, self.places[place].def?)?;
        let class = class_of(&module, def)?;
        let init = class.body.iter().find_map(|s| match s {
            Stmt::FunctionDef(d) if d.name.id.as_str() == "__init__" => Some(d),
            _ => None,
        })?;
        let arg = argument_for(&parameter_names(init), true, call, name)?;
        f(self, built_place, arg, call.start())
    }

    /// The constructor call (its start, and the place it is in) that built the object the call
    /// entering `place` went through.
    fn constructor_of(&mut self, place: usize) -> Option<(TextSize, usize)> {
        let caller = self.places[place].caller?;
        if !caller.through_instance {
            return None;
        }
        let outer = self.places[caller.place].module.clone();
        let call = call_starting(&outer, caller.call)?;
        let receiver = match &*call.func {
            Expr::Attribute(a) => &*a.value,
            other => other,
        };
        let Expr::Name(n) = receiver else { return None };
        let scope = self.scope(caller.place, &outer);
        let binding = bindings::lookup(&outer, scope, n.id.as_str(), call.start())?;
        let Source::Value(Expr::Call(built)) = binding.source else { return None };
        let def = binding.scope.function.map(Ranged::start);
        let built_place = if def == self.places[caller.place].def {
            caller.place
        } else {
            self.place_at(&outer, def, None)
        };
        Some((built.start(), built_place))
    }

    fn origin(
        &self,
        place: usize,
        range: TextRange,
        dependence: Vec<Dependence>,
        choice: bool,
    ) -> ValueOrigin {
        let module = self.places[place].module.clone();
        let line = module.line_of(range.start());
        ValueOrigin {
            function: module.function_at(line).map(|f| f.name),
            source: module.line_text(line).unwrap_or("").trim().to_owned(),
            decided_by: module.text(range).to_owned(),
            choice,
            dependence,
            path: self.path.clone(),
            line,
            module,
        }
    }

    /// Where `e` (at `place`, read at `at`) was decided.
    fn value(&mut self, place: usize, e: &Expr, at: TextSize) -> Option<ValueOrigin> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return None;
        }
        let module = self.places[place].module.clone();
        match e {
            Expr::Name(n) => self.name(place, &module, n.id.as_str(), at),
            Expr::Attribute(a) => self.attribute(place, &module, a, at),
            Expr::If(choice) => {
                if let Some(dependence) = self.differs(place, &choice.test, at, 0) {
                    return Some(self.origin(place, choice.test.range(), dependence, true));
                }
                for arm in [&*choice.body, &*choice.orelse] {
                    if self.differs(place, arm, at, 0).is_some()
                        && let Some(found) = self.value(place, arm, at)
                    {
                        return Some(found);
                    }
                }
                None
            }
            Expr::Call(c) => self.call(place, &module, c, at),
            // `[torch.empty_like(local) for _ in range(world)]`: each item's size is the
            // element's; the count of items decides only when the element does not differ.
            Expr::ListComp(comp) if self.carried == Carried::Size => {
                if let Some(found) = self.follow_if_differs(place, &comp.elt, at) {
                    return Some(found);
                }
                let dependence = self.differs(place, e, at, 0)?;
                Some(self.origin(place, e.range(), dependence, false))
            }
            _ if self.carried == Carried::Size => {
                let dependence = self.differs(place, e, at, 0)?;
                if let Some(found) = self.through_size_reads(place, e, at) {
                    return Some(found);
                }
                if let Some(found) = self.through_helper_parameters(place, module.as_ref(), e, at) {
                    return Some(found);
                }
                Some(self.origin(place, e.range(), dependence, false))
            }
            _ => {
                // A dtype passes through arithmetic and indexing from its operands.
                crate::syntax::expr::children(e)
                    .into_iter()
                    .find_map(|child| self.follow_if_differs(place, child, at))
            }
        }
    }

    fn hop(module: &Module, name: &str, at: TextSize, text: &str) -> String {
        format!("`{name}` = {} (line {})", super::quote(text), module.line_of(at))
    }

    fn name(
        &mut self,
        place: usize,
        module: &Arc<Module>,
        name: &str,
        at: TextSize,
    ) -> Option<ValueOrigin> {
        let scope = self.scope(place, module);
        let binding = bindings::lookup(module, scope, name, at)?;
        let binding_def = binding.scope.function.map(Ranged::start);
        let here = if binding_def == self.places[place].def {
            place
        } else {
            self.place_at(module, binding_def, None)
        };
        match binding.source {
            Source::Value(v) | Source::Element(v, _) => {
                self.path.push(Self::hop(module, name, binding.at, module.text(v.range())));
                let (v, element) = match (binding.source, v) {
                    (Source::Element(_, i), Expr::Tuple(t)) if i < t.elts.len() => {
                        (&t.elts[i], None)
                    }
                    (Source::Element(_, i), Expr::Call(_)) => (v, Some(i)),
                    _ => (v, None),
                };
                self.element = element;
                let found = self.value(here, v, binding.at);
                self.element = None;
                if found.is_none() {
                    self.path.pop();
                }
                found
            }
            Source::Augmented(v) => {
                let dependence = self.differs(here, v, binding.at, 0)?;
                Some(self.origin(here, v.range(), dependence, false))
            }
            Source::Parameter => {
                self.path.push(format!(
                    "`{name}`, a parameter of `{}`",
                    function_name(module, self.places[place].def)
                ));
                let found = self
                    .with_argument(place, name, &mut |w, outer, arg, at| w.value(outer, arg, at));
                if found.is_none() {
                    self.path.pop();
                }
                found
            }
            _ => None,
        }
    }

    /// `self.<attr>`: the assignments to it in the class's methods; one in `__init__` from its
    /// parameters goes on in the constructor call that built the object.
    fn attribute(
        &mut self,
        place: usize,
        module: &Arc<Module>,
        a: &ruff_python_ast::ExprAttribute,
        at: TextSize,
    ) -> Option<ValueOrigin> {
        let def = def_at(module, self.places[place].def?)?;
        let Expr::Name(owner) = &*a.value else { return None };
        if crate::syntax::tree::first_parameter(def) != Some(owner.id.as_str()) {
            return None;
        }
        let class = class_of(module, def)?;
        let attr = a.attr.id.as_str();
        let mut assignments: Vec<(&StmtFunctionDef, &Expr, TextSize)> = Vec::new();
        for stmt in &class.body {
            let Stmt::FunctionDef(method) = stmt else { continue };
            let Some(self_name) = crate::syntax::tree::first_parameter(method) else { continue };
            crate::syntax::tree::walk_scope(&method.body, &mut |s, _| {
                let Stmt::Assign(assign) = s else { return };
                for t in &assign.targets {
                    if let Expr::Attribute(ta) = t
                        && ta.attr.id.as_str() == attr
                        && matches!(&*ta.value, Expr::Name(n) if n.id.as_str() == self_name)
                    {
                        assignments.push((method, &assign.value, s.start()));
                    }
                }
            });
        }
        let _ = at;
        for (method, value, stmt_at) in assignments {
            // `__init__` runs for the object the call came through: its caller is the
            // constructor call.
            let caller = if method.name.id.as_str() == "__init__" {
                self.constructor_of(place).map(|(call, outer)| Caller {
                    place: outer,
                    call,
                    receiver_first: true,
                    through_instance: false,
                })
            } else if method.start() == def.start() {
                self.places[place].caller
            } else {
                None
            };
            let there = self.place_at(module, Some(method.start()), caller);
            if self.differs(there, value, stmt_at, 0).is_none() {
                continue;
            }
            self.path.push(Self::hop(
                module,
                &format!("self.{attr}"),
                stmt_at,
                module.text(value.range()),
            ));
            if let Some(found) = self.value(there, value, stmt_at) {
                return Some(found);
            }
            self.path.pop();
        }
        None
    }

    fn call(
        &mut self,
        place: usize,
        module: &Arc<Module>,
        c: &ExprCall,
        at: TextSize,
    ) -> Option<ValueOrigin> {
        let element = self.element.take();
        let scope = self.scope(place, module);
        let resolved = Eval::new(self.cx, module, scope, 0).resolve(&c.func, at);
        match resolved {
            Sym::Function(f) => return self.project_call(place, module, &f, c, element),
            Sym::Path(p)
                if self.carried == Carried::Size && SAME_SIZE_AS_ARGUMENT.contains(&p.as_str()) =>
            {
                return self.follow_if_differs(place, c.arguments.args.first()?, at);
            }
            Sym::Path(p)
                if self.carried == Carried::Size && SIZE_FROM_ARGUMENTS.contains(&p.as_str()) =>
            {
                return self.through_size_arguments(place, c, at);
            }
            Sym::Unknown => {
                if let Some(f) = self.method_of_given_object(place, module, c) {
                    return self.project_call(place, module, &f, c, element);
                }
            }
            _ => {}
        }
        let method = match &*c.func {
            Expr::Attribute(m) => Some((m.attr.id.as_str(), &*m.value)),
            _ => None,
        };
        if self.carried == Carried::Size
            && let Some((name, _)) = method
            && SIZE_FROM_ARGUMENTS_METHODS.contains(&name)
        {
            return self.through_size_arguments(place, c, at);
        }
        match self.carried {
            Carried::Dtype => {
                let keyword = c
                    .arguments
                    .keywords
                    .iter()
                    .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == "dtype"));
                if let Some(k) = keyword {
                    return self.follow_if_differs(place, &k.value, at);
                }
                if let Some((name, receiver)) = method {
                    if FIXED_CASTS.contains(&name) {
                        return None;
                    }
                    if DTYPE_SETTERS.contains(&name) {
                        for arg in &c.arguments.args {
                            if let Some(found) = self.follow_if_differs(place, arg, at) {
                                return Some(found);
                            }
                        }
                    }
                    return self.follow_if_differs(place, receiver, at);
                }
                c.arguments.args.iter().find_map(|arg| self.follow_if_differs(place, arg, at))
            }
            Carried::Size => {
                if let Some((name, receiver)) = method
                    && KEEPS_VALUES.contains(&name)
                {
                    return self.follow_if_differs(place, receiver, at);
                }
                let dependence = self.differs(place, &Expr::Call(c.clone()), at, 0)?;
                Some(self.origin(place, c.range(), dependence, false))
            }
        }
    }

    /// A factory's size arguments (`torch.zeros(rows, width)`): the first that differs is
    /// followed; the factory only allocates what it was given.
    fn through_size_arguments(
        &mut self,
        place: usize,
        c: &ExprCall,
        at: TextSize,
    ) -> Option<ValueOrigin> {
        c.arguments.args.iter().find_map(|arg| self.follow_if_differs(place, arg, at))
    }

    /// `buf.shape[0] // world`, `len(rows) * 2`: where every part that differs is a read of
    /// another value's size, that value's size was decided elsewhere; follow it.
    fn through_size_reads(&mut self, place: usize, e: &Expr, at: TextSize) -> Option<ValueOrigin> {
        let mut sized = Vec::new();
        let mut others = Vec::new();
        split_size_reads(e, &mut sized, &mut others);
        if sized.is_empty() || others.iter().any(|o| self.differs(place, o, at, 0).is_some()) {
            return None;
        }
        sized.into_iter().find_map(|v| self.follow_if_differs(place, v, at))
    }

    /// A computation inside a helper the walk entered (`return -(-k // step) * step`) that
    /// differs only through the helper's parameters: the helper carries what its caller passed,
    /// so the caller's argument is followed.
    fn through_helper_parameters(
        &mut self,
        place: usize,
        module: &Module,
        e: &Expr,
        at: TextSize,
    ) -> Option<ValueOrigin> {
        if !self.helpers.contains(&place) {
            return None;
        }
        let def = def_at(module, self.places[place].def?)?;
        let params = parameter_names(def);
        let mut leaves = Vec::new();
        leaves_of(e, &mut leaves);
        let mut differing = Vec::new();
        for leaf in leaves {
            if self.differs(place, leaf, at, 0).is_none() {
                continue;
            }
            match leaf {
                Expr::Name(n) if params.iter().any(|p| p == n.id.as_str()) => {
                    differing.push(n.id.to_string());
                }
                _ => return None,
            }
        }
        differing.into_iter().find_map(|p| {
            self.path.push(format!("`{p}`, a parameter of `{}`", def.name.id));
            let found =
                self.with_argument(place, &p, &mut |w, outer, arg, at| w.value(outer, arg, at));
            if found.is_none() {
                self.path.pop();
            }
            found
        })
    }

    /// The project method a call `self.<field>.<method>(...)` runs when `__init__` stored a
    /// parameter in `self.<field>` and the constructor call that built `self` passed an
    /// instance of one of the project's classes for it (`Scorer(6, Sizer(world))`).
    fn method_of_given_object(
        &mut self,
        place: usize,
        module: &Module,
        c: &ExprCall,
    ) -> Option<super::resolve::FnRef> {
        let Expr::Attribute(m) = &*c.func else { return None };
        let Expr::Attribute(field) = &*m.value else { return None };
        let Expr::Name(owner) = &*field.value else { return None };
        let def = def_at(module, self.places[place].def?)?;
        if crate::syntax::tree::first_parameter(def) != Some(owner.id.as_str()) {
            return None;
        }
        let class = class_of(module, def)?;
        let init = super::resolve::method(class, "__init__")?;
        let init_self = crate::syntax::tree::first_parameter(init)?;
        let init_params = parameter_names(init);
        let mut stored = None;
        crate::syntax::tree::walk_scope(&init.body, &mut |s, _| {
            let Stmt::Assign(assign) = s else { return };
            let Expr::Name(value) = &*assign.value else { return };
            for t in &assign.targets {
                if let Expr::Attribute(ta) = t
                    && ta.attr.id == field.attr.id
                    && matches!(&*ta.value, Expr::Name(n) if n.id.as_str() == init_self)
                    && init_params.iter().any(|p| p == value.id.as_str())
                {
                    stored = Some(value.id.to_string());
                }
            }
        });
        let stored = stored?;
        let wanted = m.attr.id.to_string();
        let cx = self.cx;
        self.with_constructor_argument(place, &stored, &mut |w, outer, arg, at| {
            let Expr::Call(built) = arg else { return None };
            let outer_module = w.places[outer].module.clone();
            let scope = w.scope(outer, &outer_module);
            let Sym::Class(r) = Eval::new(cx, &outer_module, scope, 0).resolve(&built.func, at)
            else {
                return None;
            };
            let home = r.module.clone().unwrap_or_else(|| outer_module.clone());
            let class = super::resolve::class_at(&home, r.local?)?;
            let method = super::resolve::method(class, &wanted)?;
            Some(super::resolve::FnRef {
                module: Some(home.clone()),
                def: method.start(),
                is_method: true,
            })
        })
    }

    fn follow_if_differs(&mut self, place: usize, e: &Expr, at: TextSize) -> Option<ValueOrigin> {
        self.differs(place, e, at, 0)?;
        self.value(place, e, at)
    }

    /// A call of one of the project's functions: what its `return`s give, its parameters
    /// being what this call passes.
    fn project_call(
        &mut self,
        place: usize,
        module: &Arc<Module>,
        f: &super::resolve::FnRef,
        c: &ExprCall,
        element: Option<usize>,
    ) -> Option<ValueOrigin> {
        let home = f.module.clone().unwrap_or_else(|| module.clone());
        let def = def_at(&home, f.def)?;
        let through_instance = f.is_method && matches!(&*c.func, Expr::Attribute(_));
        let caller =
            Caller { place, call: c.start(), receiver_first: f.is_method, through_instance };
        let inside = self.place_at(&home, Some(f.def), Some(caller));
        if !self.helpers.contains(&inside) {
            self.helpers.push(inside);
        }
        let mut returns: Vec<(&Expr, TextSize)> = Vec::new();
        crate::syntax::tree::walk_scope(&def.body, &mut |s, _| {
            if let Stmt::Return(r) = s
                && let Some(v) = r.value.as_deref()
            {
                returns.push((v, s.start()));
            }
        });
        for (v, at) in returns {
            let v = match (element, v) {
                (Some(i), Expr::Tuple(t)) if i < t.elts.len() => &t.elts[i],
                _ => v,
            };
            if self.differs(inside, v, at, 0).is_none() {
                continue;
            }
            self.path.push(format!(
                "`{}` returns {} (line {})",
                def.name.id,
                super::quote(home.text(v.range())),
                home.line_of(at)
            ));
            if let Some(found) = self.value(inside, v, at) {
                return Some(found);
            }
            self.path.pop();
        }
        None
    }
}

/// Splits `e` into the values whose size it reads (`x` of `x.shape[0]`, `len(x)`, `x.numel()`,
/// `x.size(1)`) and its other leaves (names, calls) outside those reads.
fn split_size_reads<'e>(e: &'e Expr, sized: &mut Vec<&'e Expr>, others: &mut Vec<&'e Expr>) {
    if let Some(v) = sized_value(e) {
        sized.push(v);
        return;
    }
    match e {
        Expr::Name(_) | Expr::Call(_) | Expr::Attribute(_) => others.push(e),
        Expr::Subscript(s) => {
            split_size_reads(&s.value, sized, others);
            split_size_reads(&s.slice, sized, others);
        }
        Expr::BinOp(b) => {
            split_size_reads(&b.left, sized, others);
            split_size_reads(&b.right, sized, others);
        }
        Expr::UnaryOp(u) => split_size_reads(&u.operand, sized, others),
        Expr::Starred(st) => split_size_reads(&st.value, sized, others),
        Expr::Tuple(t) => t.elts.iter().for_each(|x| split_size_reads(x, sized, others)),
        Expr::Slice(sl) => {
            for part in [&sl.lower, &sl.upper, &sl.step].into_iter().flatten() {
                split_size_reads(part, sized, others);
            }
        }
        _ => {}
    }
}

/// The names, attributes and calls `e` computes with (not looking inside them).
fn leaves_of<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_) => out.push(e),
        _ => crate::syntax::expr::children(e).into_iter().for_each(|c| leaves_of(c, out)),
    }
}

/// The value whose size `e` reads: `x.shape` (and its items), `len(x)`, `x.numel()`,
/// `x.size(...)`.
fn sized_value(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Attribute(a) if a.attr.id.as_str() == "shape" => Some(&a.value),
        Expr::Subscript(s) => match &*s.value {
            Expr::Attribute(a) if a.attr.id.as_str() == "shape" => Some(&a.value),
            _ => None,
        },
        Expr::Call(c) => match &*c.func {
            Expr::Name(n) if n.id.as_str() == "len" && c.arguments.args.len() == 1 => {
                Some(&c.arguments.args[0])
            }
            Expr::Attribute(m) if SIZE_READ_METHODS.contains(&m.attr.id.as_str()) => Some(&m.value),
            _ => None,
        },
        _ => None,
    }
}

/// The file's name without its directories (`step.py`), as the hops of a chain show it.
fn file_name(module: &Module) -> String {
    module
        .file_path()
        .and_then(|p| p.file_name())
        .map_or_else(|| "<source>".to_owned(), |n| n.to_string_lossy().into_owned())
}

fn function_name(module: &Module, def: Option<TextSize>) -> String {
    def.and_then(|d| def_at(module, d))
        .map_or_else(|| "<module>".to_owned(), |d| d.name.id.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::names::project::FileProject;
    use crate::syntax::types::DependenceKind;

    fn project(files: &[(&str, &str)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "desync-origin-{}-{}",
            std::process::id(),
            files[files.len() - 1].0.replace('.', "_")
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    /// The frames of a stack whose user frames call each other with nothing but the
    /// library's call dispatch between them.
    fn frames(cx: &Analysis<'_>, dir: &Path, stack: &[(&str, u32)]) -> Vec<OriginFrame> {
        let project = cx.project().unwrap();
        stack
            .iter()
            .map(|(file, line)| OriginFrame {
                module: project.load(&dir.join(file)).unwrap(),
                line: *line,
                called_from_outer: true,
            })
            .collect()
    }

    const SYNC: &str = "\
import torch.distributed as dist

class Reducer:
    def __init__(self, wire, world):
        self.wire = wire
        self.world = world

    def __call__(self, t, rounds):
        payload = t.to(self.wire) if rounds > 0 else t
        dist.all_reduce(payload)
        return payload / self.world
";

    fn trainer(precision: &str) -> String {
        format!(
            "\
import os
import torch
from sync import Reducer

def wire_precision(knobs):
{precision}

def run():
    knobs = {{\"fast\": os.environ.get(\"FAST_LINK\") == \"1\"}}
    wire = wire_precision(knobs)
    red = Reducer(wire, 4)
    for i in range(3):
        red(torch.ones(4), i)
"
        )
    }

    #[test]
    fn a_dtype_is_followed_through_the_constructor_to_the_choice_that_made_it() {
        let main = trainer("    return torch.float16 if knobs[\"fast\"] else torch.float32");
        let dir = project(&[("sync.py", SYNC), ("train.py", &main)]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("sync.py", 10), ("train.py", 13)]);
        let found = cx.value_origin(&stack, Carried::Dtype).expect("an origin");
        assert_eq!(found.module.file_path(), Some(dir.join("train.py").as_path()));
        assert_eq!(found.line, 6, "{found:?}");
        assert!(found.choice);
        assert_eq!(found.dependence[0].kind, DependenceKind::Environment, "{found:?}");
        assert!(found.path.iter().any(|h| h.contains("self.wire")), "{:?}", found.path);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_choice_every_rank_makes_alike_is_no_origin() {
        // The same helper, deciding on a constant: nothing differs on the way.
        let main = trainer("    return torch.float16 if 2 > 1 else torch.float32");
        let dir = project(&[("sync.py", SYNC), ("train_same.py", &main)]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("sync.py", 10), ("train_same.py", 13)]);
        assert!(cx.value_origin(&stack, Carried::Dtype).is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn split_sizes_are_followed_through_an_autograd_function_to_their_computation() {
        let exchange = "\
import torch
import torch.distributed as dist

class Shuffle(torch.autograd.Function):
    @staticmethod
    def forward(ctx, rows, out_sizes, in_sizes):
        out = rows.new_empty((sum(out_sizes), rows.shape[1]))
        dist.all_to_all_single(out, rows, output_split_sizes=out_sizes, input_split_sizes=in_sizes)
        return out
";
        let main = "\
import os
import torch
from exchange import Shuffle

def step(rows):
    slots = int(os.environ.get(\"SLOTS\", \"3\"))
    wanted = torch.full((4,), 5)
    expected = torch.minimum(wanted, torch.tensor(slots))
    return Shuffle.apply(rows, expected.tolist(), [5, 5, 5, 5])
";
        let dir = project(&[("exchange.py", exchange), ("main.py", main)]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("exchange.py", 8), ("main.py", 9)]);
        let found = cx.value_origin(&stack, Carried::Size).expect("an origin");
        assert_eq!(found.module.file_path(), Some(dir.join("main.py").as_path()));
        assert_eq!(found.line, 8, "{found:?}");
        assert!(!found.choice);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The stack line shows which call entered a frame, also a call of a value nothing in
    /// view types (`sync(ids)`, a module passed in): its arguments are the parameters'.
    #[test]
    fn a_frame_entered_through_a_call_of_an_untyped_value_is_followed_out() {
        let tokens = "\
def real_tokens(ids, pad_id):
    keep = ids.ne(pad_id)
    return ids[keep]
";
        let lengths = "\
import torch
import torch.distributed as dist
from torch import nn
from tokens import real_tokens

class LengthSync(nn.Module):
    def forward(self, ids):
        real = real_tokens(ids, 0)
        out = [torch.empty_like(real) for _ in range(dist.get_world_size())]
        dist.all_gather(out, real)
        return out
";
        let main = "\
import torch
import torch.distributed as dist
from lengths import LengthSync

def step(sync, ids):
    return sync(ids)

def main():
    rank = dist.get_rank()
    step(LengthSync(), torch.load(f\"shard{rank}.pt\"))
";
        let dir =
            project(&[("tokens.py", tokens), ("lengths.py", lengths), ("main_untyped.py", main)]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(
            &cx,
            &dir,
            &[("lengths.py", 10), ("main_untyped.py", 6), ("main_untyped.py", 10)],
        );
        let found = cx.value_origin(&stack, Carried::Size).expect("an origin");
        assert_eq!(found.module.file_path(), Some(dir.join("tokens.py").as_path()), "{found:?}");
        assert_eq!(found.line, 3, "{found:?}");
        // `torch.load` of the rank's own shard file.
        assert_eq!(found.dependence[0].kind, DependenceKind::Environment, "{found:?}");
        // The chain names the argument of the untyped call.
        assert!(
            found.dependence.iter().any(|d| d.evidence.contains("main_untyped.py:6")),
            "{found:?}"
        );
        // Had a framework's loop stood between `step` and the module (library frames other
        // than the call dispatch), `sync(ids)` is not shown to have entered `forward`.
        let mut through_library = stack.clone();
        through_library[0].called_from_outer = false;
        assert!(cx.value_origin(&through_library, Carried::Size).is_none());
        std::fs::remove_dir_all(dir).unwrap();
    }

    const ROUTING: &str = "\
import torch

def per_expert(scores, experts):
    choice = scores.argmax(dim=-1)
    return torch.bincount(choice, minlength=experts)
";

    fn dispatch(agree: &str) -> String {
        format!(
            "\
import torch
import torch.distributed as dist
from routing import per_expert

def exchange(x, scores):
    send = per_expert(scores, 4)
{agree}
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    out = x.new_empty((int(recv.sum()), x.shape[1]))
    dist.all_to_all_single(out, x, input_split_sizes=send.tolist(), output_split_sizes=recv.tolist())
    return out
"
        )
    }

    /// Features a rank appended from its own files reach a list's contents only; a count per
    /// value of the router's choices over them (a helper module's `torch.bincount`) is decided
    /// by those contents: the split sizes' origin is the count.
    const FEATURES: &str = "\
import glob
import torch
import torch.distributed as dist
from dispatch import exchange

def main():
    rank = dist.get_rank()
    cache = []
    for path in sorted(glob.glob(f\"feats/{rank}/*.pt\")):
        cache.append(torch.load(path))
    feats = torch.cat(cache)
    scores = feats @ torch.ones(feats.shape[1], 4)
    exchange(feats, scores)
";

    #[test]
    fn split_sizes_counted_from_a_ranks_own_router_choices_are_followed_to_the_count() {
        let dispatch = dispatch("    pass");
        let dir =
            project(&[("routing.py", ROUTING), ("dispatch.py", &dispatch), ("feats.py", FEATURES)]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("dispatch.py", 11), ("feats.py", 13)]);
        let found = cx.value_origin(&stack, Carried::Size).expect("an origin");
        assert_eq!(found.module.file_path(), Some(dir.join("routing.py").as_path()), "{found:?}");
        assert_eq!(found.line, 5, "{found:?}");
        assert!(found.dependence.iter().all(|d| !d.indirect), "{found:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn split_sizes_all_reduced_before_the_exchange_have_no_origin() {
        // The same counts, summed over the ranks first: every rank holds the same sizes.
        let dispatch = dispatch("    dist.all_reduce(send)");
        let dir = project(&[
            ("routing.py", ROUTING),
            ("dispatch.py", &dispatch),
            ("feats_agreed.py", FEATURES),
        ]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("dispatch.py", 11), ("feats_agreed.py", 13)]);
        let found = cx.value_origin(&stack, Carried::Size);
        assert!(found.as_ref().is_none_or(|f| f.line != 5), "{found:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A bucket's dtype chosen from the peak of what the rank's batches held (appended to a
    /// list, reduced with `amax`): the choice is the origin, decided by rank-local data.
    #[test]
    fn a_dtype_chosen_from_a_reduction_of_local_batches_is_the_origin() {
        let bucket = "\
import torch.distributed as dist

class Bucket:
    def __init__(self, wire):
        self.wire = wire

    def flush(self, flat):
        payload = flat.to(self.wire)
        dist.all_reduce(payload)
        return payload
";
        let main = "\
import torch
from torch.utils.data import DataLoader, DistributedSampler
from bucket import Bucket

def wire_dtype(peaks):
    top = torch.stack(peaks).amax()
    return torch.float32 if top > 6.0e4 else torch.float16

def run(dataset, params):
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
    peaks = []
    for batch in loader:
        peaks.append(batch.abs().max())
    bucket = Bucket(wire_dtype(peaks))
    bucket.flush(torch.cat([p.flatten() for p in params]))
";
        let dir = project(&[("bucket.py", bucket), ("peaks.py", main)]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("bucket.py", 9), ("peaks.py", 15)]);
        let found = cx.value_origin(&stack, Carried::Dtype).expect("an origin");
        assert_eq!(found.module.file_path(), Some(dir.join("peaks.py").as_path()), "{found:?}");
        assert_eq!(found.line, 7, "{found:?}");
        assert!(found.choice);
        assert_eq!(found.dependence[0].kind, DependenceKind::LocalData, "{found:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A buffer's height counted from the rank's own data two calls and a module away: the
    /// collective's own function only reads it off the buffer (`buf.shape[0] // n`), the
    /// buffer is allocated with that height by a factory, and the height is element 1 of what a
    /// method of an object the constructor was given returns. The origin is the count.
    #[test]
    fn a_buffer_height_is_followed_through_a_factory_and_an_injected_objects_method() {
        let wire = "\
import torch
import torch.distributed as dist

def spread(buf):
    n = dist.get_world_size()
    part = torch.empty(buf.shape[0] // n, *buf.shape[1:])
    dist.reduce_scatter_tensor(part, buf)
    return part
";
        let sizing = "\
import torch

def pad_to(k, step):
    return -(-k // step) * step

class Sizer:
    def __init__(self, step):
        self.step = step

    def plan(self, keys):
        seen = torch.unique(keys)
        height = pad_to(seen.numel(), self.step)
        return seen, height
";
        let scorer = "\
import torch
from wire import spread

class Scorer:
    def __init__(self, width, sizer):
        self.width = width
        self.sizer = sizer

    def score(self, keys):
        seen, height = self.sizer.plan(keys)
        grid = torch.zeros(height, self.width)
        grid[: seen.numel()] = seen.float().unsqueeze(-1)
        return spread(grid.detach())
";
        let main = "\
import torch
import torch.distributed as dist
from scorer import Scorer
from sizing import Sizer

def run():
    rank = dist.get_rank()
    scorer = Scorer(6, Sizer(dist.get_world_size()))
    for i in range(4):
        keys = torch.randint(0, 50, (8,), generator=torch.Generator().manual_seed(rank + i))
        scorer.score(keys)
";
        let dir = project(&[
            ("wire.py", wire),
            ("sizing.py", sizing),
            ("scorer.py", scorer),
            ("height_main.py", main),
        ]);
        let project = FileProject::new([dir.clone()]);
        let cx = Analysis::new(Some(&project));
        let stack = frames(&cx, &dir, &[("wire.py", 7), ("scorer.py", 13), ("height_main.py", 11)]);
        let found = cx.value_origin(&stack, Carried::Size).expect("an origin");
        assert_eq!(found.module.file_path(), Some(dir.join("sizing.py").as_path()), "{found:?}");
        assert_eq!(found.line, 12, "{found:?}");
        assert!(!found.choice);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
