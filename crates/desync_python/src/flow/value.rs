//! The evaluator: what an expression's value depends on, one rule per kind of expression.
//! Names are followed to their bindings ([`bindings`]); calls are resolved to qualified names
//! ([`super::resolve`]) and looked up in the knowledge table, or summarised when they are the
//! project's own functions ([`super::summary`]).

use ruff_python_ast::{CmpOp, Comprehension, Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::resolve::{ClassRef, FnRef, Sym};
use super::{Analysis, Deps, MAX_HOPS, Value, key_of, node_text, quote, via};
use crate::dependence::bindings::{self, Binding, Scope, Source};
use crate::expr::children;
use crate::knowledge::{Agrees, RANK_ENV_VARS, Role, UNIFORM_ENV_VARS, knowledge};
use crate::module::Module;
use crate::tree::{MAX_DEPTH, Slot};
use crate::types::DependenceKind::{Environment, Exception, LocalData, Randomness, RankId, Time};

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
        Expr::Call(c) if crate::expr::last_segment(&c.func) == Some("device") => true,
        _ => !deps.reasons.is_empty() && deps.reasons.iter().all(|r| r.kind == RankId),
    }
}

pub(crate) struct Eval<'a, 'm> {
    pub(super) cx: &'a Analysis<'a>,
    pub(super) module: &'m Module,
    pub(super) scope: Scope<'m>,
    /// Calls summarised around this evaluation.
    pub(super) call_depth: usize,
    /// Bindings being followed (cycle guard and depth limit).
    pub(super) tracing: Vec<TextSize>,
    /// Names bound by the comprehensions around the expression, with their items' dependence.
    shadow: Vec<(String, Value)>,
    /// The text of an expression parsed on its own (not part of the module), while it is the
    /// one being evaluated.
    pub(super) foreign: Option<String>,
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

    pub(super) fn text(&self, node: &impl Ranged) -> &str {
        node_text(self.module, self.foreign.as_deref(), node.range())
    }

    pub(super) fn quoted(&self, node: &impl Ranged) -> String {
        quote(self.text(node))
    }

    pub(super) fn line_of(&self, at: TextSize) -> u32 {
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
            crate::expr::walk(&g.target, &mut |x| {
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

    // ---- names ---------------------------------------------------------------------------

    fn name(&mut self, name: &str, at: TextSize) -> Value {
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
    pub(super) fn follow(&mut self, name: &str, binding: Binding<'m>) -> Value {
        self.follow_from(name, binding, None)
    }

    /// [`Self::follow`] for a use at `use_at`: the `if`s (and loops, handlers) that hold both
    /// the binding and a later use decide nothing between the ranks that reach the use (every
    /// one of them passed the same tests on the way), so only the tests around the binding
    /// alone count (`model_module` chosen under `if rank in ranks(embd_group):` and read
    /// inside that block).
    fn follow_from(&mut self, name: &str, binding: Binding<'m>, use_at: Option<TextSize>) -> Value {
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
    fn counter_in_its_loop(
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
        let offsets: Vec<&Expr> = match crate::expr::last_segment(&c.func) {
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
    pub(super) fn assigned(&mut self, v: &Expr, at: TextSize) -> Value {
        if let Expr::BoolOp(b) = v {
            let tests: Vec<Option<Deps>> = b
                .values
                .iter()
                .map(|x| {
                    super::condition::sentinel_test(self, x, at)
                        .or_else(|| super::condition::structure_test(self, x, at))
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
        match super::condition::sentinel_test(self, v, at)
            .or_else(|| super::condition::structure_test(self, v, at))
        {
            Some(d) => Value::of(d),
            None => self.value(v, at),
        }
    }

    fn bound_value(&mut self, name: &str, binding: &Binding<'m>) -> Value {
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
    pub(super) fn items(&mut self, iter: &Expr, at: TextSize) -> Value {
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
    fn is_data_source(&mut self, e: &Expr, at: TextSize) -> bool {
        matches!(self.resolve(e, at), Sym::Instance(ClassRef { qualified: Some(q), .. }) if knowledge().api(&q).is_some_and(|a| a.role == Role::Data))
    }

    fn parameter(&mut self, name: &str, binding: &Binding<'m>) -> Deps {
        // Framework hooks: `training_step(self, batch, ...)` gets the rank's own batch.
        if let Some(def) = binding.scope.function
            && let Some(class) = super::resolve::class_of(self.module, def)
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
    fn describe(&self, name: &str, binding: &Binding<'_>) -> String {
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
                crate::expr::snippet(module.text(v.range()))
            ),
            _ => format!("`{name}` (line {line})"),
        }
    }

    fn module_of(&self, _binding: &Binding<'_>) -> &'m Module {
        self.module
    }

    // ---- control dependence ----------------------------------------------------------------

    /// What decides whether the statement at `at` runs at all: the tests of the `if`s and
    /// `while`s around it in its function, and the `except` it sits in.
    fn control_at(&mut self, at: TextSize) -> Deps {
        self.control_except(at, None, 0)
    }

    /// How many of the blocks around the binding at `binding` (outermost first, within its
    /// function) also hold the use at `use_at`, when the binding comes first (a value carried
    /// over from an earlier iteration may have been bound under other outcomes).
    fn levels_shared(&self, binding: TextSize, use_at: TextSize) -> usize {
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
    fn control_except(&mut self, at: TextSize, skip: Option<TextSize>, shared: usize) -> Deps {
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
                    let d = super::condition::decision(self, &s.test, s.start());
                    out.merge(d.through(via::CHOICE).hop(&format!(
                        "under `if {}` (line {})",
                        crate::expr::snippet(self.module.text(s.test.range())),
                        self.line_of(s.start())
                    )));
                }
                (Stmt::If(s), Slot::Clause(i)) => {
                    // Reaching clause i means the tests before it were false.
                    for c in s.elif_else_clauses.iter().take(i + 1).filter_map(|c| c.test.as_ref())
                    {
                        let d = super::condition::decision(self, c, c.start());
                        out.merge(d.through(via::CHOICE).hop(&format!(
                            "under `elif {}`",
                            crate::expr::snippet(self.module.text(c.range()))
                        )));
                    }
                    let d = super::condition::decision(self, &s.test, s.start());
                    out.merge(d.through(via::CHOICE).hop(&format!(
                        "in the `else` of `if {}` (line {})",
                        crate::expr::snippet(self.module.text(s.test.range())),
                        self.line_of(s.start())
                    )));
                }
                (Stmt::While(s), Slot::Body) => {
                    let d = super::condition::decision(self, &s.test, s.start());
                    out.merge(d.through(via::CHOICE).hop(&format!(
                        "inside `while {}`",
                        crate::expr::snippet(self.module.text(s.test.range()))
                    )));
                }
                // `try: torch.cuda.get_device_capability() except RuntimeError: return False`,
                // `try: import torch_mlu`: what the body asks or imports is the same on every
                // rank, so is whether it raised.
                (Stmt::Try(t), Slot::Handler(_)) if self.probes_environment(&t.body) => {}
                (Stmt::Try(t), Slot::Handler(i)) => {
                    let structural =
                        t.handlers.get(i).is_some_and(crate::dependence::structural_handler);
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
    /// `try: from olmo_core.nn.hf import ...` / `except ImportError`). At module level a body
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
            for e in crate::tree::header_exprs(stmt) {
                crate::expr::walk(e, &mut |x| {
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
                Sym::Path(p) => knowledge().api(&p).is_some_and(|api| api.role == Role::Config),
                _ => false,
            })
    }

    /// Ranks taking turns at the same call: `binding` assigns `name = f(...)` directly in one
    /// block of an `if` whose test compares the rank (`rank == 0`), and the complementary block
    /// (its `else`, or a neighbouring `if` with the negated test, `rank != 0`) assigns
    /// `name = f(...)` too: rank 0 loads first, the others after a barrier, and every rank ends
    /// up with what `f` returns. Returns the start of the `if` (whose test then decides
    /// nothing) and the other call.
    fn turn_taken(&mut self, name: &str, binding: &Binding<'m>) -> Option<(TextSize, &'m Expr)> {
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
    fn loops_around(&mut self, binding: &Binding<'m>) -> Deps {
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
    pub(super) fn mutations(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
        until: Option<TextSize>,
    ) -> Deps {
        // (statement, values written, whether it writes into a part: a container's item or an
        // object's attribute rather than the value itself)
        let mut found: Vec<(&'m Stmt, Vec<&'m Expr>, bool)> = Vec::new();
        let made_empty = matches!(binding.source, Source::Value(v) if is_empty_container(v));
        crate::tree::walk_scope(binding.scope.suite, &mut |stmt, _| {
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
                crate::expr::snippet(self.module.trimmed_line_at(stmt.start()).as_str())
            );
            let d = if into_part { d.through(via::CONTAINER) } else { d };
            out.merge(d.hop(&hop));
        }
        out
    }

    // ---- consensus -------------------------------------------------------------------------

    /// "`flag` agreed by `dist.all_reduce(flag, ...)` at line 14" when, between the binding
    /// and the use, a statement of the same scope passes `name` to a collective (or to a
    /// project function) that leaves it identical on every rank.
    pub(crate) fn agreed_between(
        &mut self,
        name: &str,
        binding: &Binding<'m>,
        use_at: TextSize,
    ) -> Option<String> {
        if binding.effective > use_at
            || !matches!(
                binding.source,
                Source::Value(_) | Source::Element(..) | Source::Augmented(_) | Source::Parameter
            )
        {
            return None;
        }
        let index = self.module.scope_index(binding.scope.suite);
        // The calls between the binding and the use (noted in source order), at most the last
        // few: asked at each of thousands of calls of one name, all of them was quadratic.
        let starts = index.first_argument_calls.of(name);
        let from = starts.partition_point(|&at| at < binding.effective);
        let to = starts.partition_point(|&at| at < use_at).max(from);
        let window = &starts[from..to];
        let window = &window[window.len().saturating_sub(MAX_AGREEING_CALLS)..];
        let calls = window
            .iter()
            .filter_map(|&at| crate::tree::stmt_starting_at(binding.scope.suite, at))
            .filter(|stmt| stmt.end() <= use_at)
            .filter_map(|stmt| match stmt {
                Stmt::Expr(s) => match crate::dependence::bindings::awaited(&s.value) {
                    Expr::Call(c) => Some(c),
                    _ => None,
                },
                _ => None,
            });
        for c in calls {
            // `await asyncio.to_thread(dist.broadcast_object_list, objs, src=0)`.
            let forwarded = self.forwarded(c);
            let c = forwarded.as_ref().unwrap_or(c);
            let is_name =
                |e: Option<&Expr>| matches!(e, Some(Expr::Name(n)) if n.id.as_str() == name);
            // Passed first, or by the keyword of that parameter (`broadcast(tensor=t, src=0)`).
            let agrees = match self.resolve(&c.func, c.start()) {
                Sym::Path(p) => knowledge().api(&p).is_some_and(|a| is_name(a.agreed_argument(c))),
                Sym::Function(f) => self.summary(&f).is_some_and(|s| {
                    s.agrees_params.contains(&0)
                        && s.parameters.first().is_some_and(|first| {
                            is_name(argument_for(&s.parameters, false, c, first))
                        })
                }),
                _ => false,
            };
            if agrees {
                return Some(format!(
                    "`{name}` agreed by `{}` at line {}",
                    crate::expr::snippet(self.module.text(c.range())),
                    self.line_of(c.start())
                ));
            }
        }
        None
    }

    // ---- attributes and subscripts ----------------------------------------------------------

    fn attribute(&mut self, e: &Expr, at: TextSize, depth: usize) -> Deps {
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
        if self.call_depth >= super::MAX_CALL_DEPTH || base.fields.is_none() {
            return None;
        }
        let Sym::Instance(class) = self.resolve(obj, at) else { return None };
        let local = class.local?;
        let module = class.module.clone();
        let target: &Module = module.as_deref().unwrap_or(self.module);
        let classdef = super::resolve::class_at(target, local)?;
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
            let written = crate::expr::snippet(self.text(arg));
            let origin = format!("`{written}.{attribute}` (`{p}`)");
            return role_deps(api.role, origin);
        }
        self.attribute(&read, at, 0)
    }

    /// The dependence a table role gives to `e`, if the path names a row.
    fn role_of_path(&mut self, path: &str, e: &Expr) -> Option<Deps> {
        let api = knowledge().api(path)?;
        Some(role_deps(api.role, self.quoted(e)))
    }

    fn subscript(
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
    /// variable ([`Reason::key_param`](super::Reason)).
    pub(super) fn environ(&self, key: &Expr, e: &Expr) -> Deps {
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
    fn is_parameter(&self, n: &ruff_python_ast::ExprName) -> bool {
        bindings::lookup(self.module, self.scope, n.id.as_str(), n.start())
            .is_some_and(|b| matches!(b.source, Source::Parameter))
    }

    /// A call's argument for the parameter that names an environment variable the callee reads
    /// (`reason`): the rank for `"LOCAL_RANK"`, nothing for `"WORLD_SIZE"`, the caller's own
    /// parameter when it passes one on, the environment otherwise.
    fn environ_argument(&self, mut reason: super::Reason, arg: Option<&Expr>, hop: &str) -> Deps {
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

    // ---- calls -------------------------------------------------------------------------------

    fn call(&mut self, e: &Expr, c: &ExprCall, at: TextSize, depth: usize) -> Value {
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
        if let Some(root) = crate::expr::root_name(&c.func)
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
    fn typed_as_placement(&mut self, arg: &Expr, at: TextSize) -> bool {
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
    fn annotated_type(&mut self, a: &Expr, at: TextSize) -> Option<String> {
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
                    if crate::expr::int_literal(r) == Some(1) {
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
                crate::expr::int_literal(branch) == Some(1)
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
    fn every_return_written(
        &mut self,
        f: &FnRef,
        holds: &mut dyn FnMut(&mut Eval<'_, '_>, Option<&Expr>, TextSize) -> bool,
    ) -> bool {
        self.in_function(f, |there, def| {
            let mut returns: Vec<&ruff_python_ast::StmtReturn> = Vec::new();
            crate::tree::walk_scope(&def.body, &mut |stmt, _| {
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
    fn every_binding(
        &mut self,
        name: &str,
        at: TextSize,
        holds: &mut dyn FnMut(&mut Self, &'m Expr, TextSize) -> bool,
    ) -> bool {
        let all = bindings::bindings(self.module, self.scope, name);
        self.every_binding_of(all, at, holds)
    }

    /// [`Eval::every_binding`] over a name's bindings already looked up.
    fn every_binding_of(
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
    fn every_binding_with_placeholders(
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
    fn every_return(
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
    pub(super) fn in_function<R>(
        &self,
        f: &FnRef,
        ask: impl FnOnce(&mut Eval<'_, '_>, &StmtFunctionDef) -> R,
    ) -> Option<R> {
        let module = f.module.clone();
        let target: &Module = module.as_deref().unwrap_or(self.module);
        let def = super::resolve::def_at(target, f.def)?;
        let mut there = Eval::new(self.cx, target, Scope::of(target, Some(def)), self.call_depth);
        Some(ask(&mut there, def))
    }

    /// The function `def` is nested in, if it is nested in one.
    fn enclosing_function(&self, def: &StmtFunctionDef) -> Option<&'m StmtFunctionDef> {
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
    fn construct(&mut self, class: &ClassRef, c: &ExprCall, at: TextSize, depth: usize) -> Value {
        let module: &Module = class.module.as_deref().unwrap_or(self.module);
        let names = class
            .local
            .and_then(|at| super::resolve::class_at(module, at))
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
    fn table_call(&mut self, path: &str, e: &Expr, c: &ExprCall) -> Option<Value> {
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
                Deps::rank_within(origin, super::grid_group(&api.axes_of(c)))
            }
            Role::Rank => match api.group_arg.and_then(|i| super::group_argument(c, Some(i))) {
                Some(group) => Deps::rank_within(origin, self.text(group).to_owned()),
                None => Deps::reason(RankId, origin),
            },
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
    fn is_module_path(&mut self, e: &Expr, at: TextSize) -> bool {
        match e {
            Expr::Name(n) => matches!(
                bindings::lookup(self.module, self.scope, n.id.as_str(), at).map(|b| b.source),
                Some(Source::Import { .. })
            ),
            Expr::Attribute(a) => self.is_module_path(&a.value, at),
            _ => false,
        }
    }

    // ---- classes -----------------------------------------------------------------------------

    /// The class whose instance `name` is, when it is `self` of a method (or `cls`).
    pub(super) fn self_class(
        &mut self,
        name: &str,
        at: TextSize,
    ) -> Option<&'m ruff_python_ast::StmtClassDef> {
        let def = self.scope.function?;
        if crate::tree::first_parameter(def)? != name {
            return None;
        }
        let binding = bindings::lookup(self.module, self.scope, name, at)?;
        if !matches!(binding.source, Source::Parameter) {
            return None;
        }
        super::resolve::class_of(self.module, def)
    }

    /// What the methods of `class` assign to `self.<attr>`.
    fn class_attribute(
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
    pub(super) fn class_attribute_length(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
    ) -> Option<Deps> {
        let (out, found) = self.attribute_of_class(class, attr, true);
        found.then_some(out)
    }

    /// [`Self::assigned_attribute`], memoised per analysis.
    fn attribute_of_class(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
        length: bool,
    ) -> (Deps, bool) {
        let key = (super::key_of(self.module), class.start(), attr.to_owned(), length);
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
    fn assigned_attribute(
        &mut self,
        class: &'m ruff_python_ast::StmtClassDef,
        attr: &str,
        length: bool,
    ) -> (Deps, bool) {
        let mut out = Deps::default();
        let mut found = false;
        for stmt in &class.body {
            let Stmt::FunctionDef(method) = stmt else { continue };
            let Some(self_name) = crate::tree::first_parameter(method) else { continue };
            let scope = Scope { function: Some(method), suite: &method.body };
            let mut assigned: Vec<(&'m Expr, &'m Stmt)> = Vec::new();
            crate::tree::walk_scope(&method.body, &mut |s, _| {
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
    pub(super) fn class_bases(&mut self, class: &'m ruff_python_ast::StmtClassDef) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_bases(class, &mut out, 0);
        out
    }

    fn collect_bases(
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
                    if let Some(inner) = super::resolve::class_at(self.module, def_at) {
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
    pub(super) fn apply(
        &mut self,
        summary: &super::Summary,
        f: &FnRef,
        c: &ExprCall,
        at: TextSize,
        pick: impl Fn(&super::Summary) -> Value,
    ) -> Value {
        pick(summary).map(|d| self.substitute(d, summary, f, c, at))
    }

    /// Replaces a summary's parameters by the dependence of the arguments passed for them.
    pub(super) fn substitute(
        &mut self,
        mut d: Deps,
        summary: &super::Summary,
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
                    v = super::condition::structural(v);
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
        && crate::expr::root_name(target) == Some(name)
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
fn tests_membership_of_loop_item(test: &Expr, levels: &[crate::tree::Level<'_>]) -> bool {
    let Expr::Compare(c) = test else { return false };
    let ([ruff_python_ast::CmpOp::In], [Expr::Name(set)]) = (&*c.ops, &*c.comparators) else {
        return false;
    };
    levels.iter().any(|level| match (level.owner, level.slot) {
        (Some(Stmt::For(f)), Slot::Body) => {
            let mut bound = false;
            crate::expr::walk(&f.target, &mut |x| {
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
        let Some(own) = crate::tree::first_parameter(method) else { continue };
        let mut found = None;
        crate::tree::walk_scope(&method.body, &mut |stmt, _| {
            if found.is_some() {
                return;
            }
            for e in crate::tree::header_exprs(stmt) {
                crate::expr::walk(e, &mut |x| {
                    let Expr::Call(c) = x else { return };
                    let Some(registration) = crate::expr::last_segment(&c.func) else { return };
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
            .and_then(|d| crate::tree::first_parameter(d).map(|p| vec![(d, p)]))
            .unwrap_or_default(),
        Expr::Call(c) => {
            let (factory, inner_own) = match &*c.func {
                Expr::Name(n) => match defined_in(method, n.id.as_str()) {
                    Some(d) => (d, own),
                    None => return Vec::new(),
                },
                f => match own_method(f) {
                    Some(d) => match crate::tree::first_parameter(d) {
                        Some(p) => (d, p),
                        None => return Vec::new(),
                    },
                    None => return Vec::new(),
                },
            };
            let mut out = Vec::new();
            crate::tree::walk_scope(&factory.body, &mut |stmt, _| {
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
    crate::tree::walk_scope(&def.body, &mut |stmt, _| {
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
    crate::tree::walk_scope(&def.body, &mut |stmt, _| {
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
    crate::expr::dotted(callee).is_some_and(|name| {
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
