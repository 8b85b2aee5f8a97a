//! What a collective's tensor carries, apart from its values: its size (first dimension) and
//! its dtype, and why either can differ across ranks. A gather needs the same size on every
//! rank, every collective the same dtype.
//!
//! Sizes follow the data through assignments, slices and indexing, the creation calls that take
//! them (`torch.zeros(n, 4)`), the project's functions and generators (`shard_batches(...)`
//! yields what its `yield` says, resized under `if fault == rank:`), lists grown by
//! `append` in a loop, and the rebindings a condition decides. A size read from data values
//! (`int(mask.sum())`, `x[mask]`, `x.nonzero()`) differs across ranks; the items of a data
//! loader have the loader's batch size unless the loader's length differs (a ragged last
//! batch); items of other iterables are taken to have equal sizes (the limit: a batch's size is
//! not followed into the dataset).
//!
//! Dtypes follow `.to(d)`, `.type(d)` and `dtype=` where `d` can be one of the table's dtypes.
//! Parameters are followed into the module's own calls of the function.
//!
//! Length: one evaluator of sizes and dtypes (`Meta`, about 930 lines: one method per kind of
//! expression, as `values/value/` is split) and its helpers (400 lines). A later split follows
//! `values/value/`: names and bindings, calls, subscripts, callers, into `metadata/`.

use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::Collectives;
use super::callers::function_scope;
use crate::names::bindings::{self, Binding, Source};
use crate::names::knowledge::{Agrees, Role, knowledge};
use crate::syntax::module::Module;
use crate::syntax::tree::{self, Slot};
use crate::syntax::types::DependenceKind::LocalData;
use crate::values::resolve::{ClassRef, FnRef, Sym, def_at};
use crate::values::value::{Eval, PLACEMENT_METHODS};
use crate::values::{Deps, Finding, quote};

/// How deep sizes and dtypes are followed (bindings, calls, callers).
const MAX_DEPTH: usize = 12;

/// Tensor methods (torch 2.11) whose result has as many elements as the values select.
const SELECTING: &[&str] =
    &["nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"];
/// Tensor methods whose result is a scalar read from the values (a count when used as a size).
const READS_VALUES: &[&str] =
    &["item", "tolist", "sum", "max", "min", "count_nonzero", "any", "all"];
/// Methods whose positional arguments are not sizes (devices, dtypes, flags).
const NOT_SIZES: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "type",
    "float",
    "half",
    "bfloat16",
    "double",
    "long",
    "int",
    "bool",
    "detach",
    "clone",
    "contiguous",
    "requires_grad_",
    "pin_memory",
    "manual_seed",
    "argmax",
    "argmin",
    "softmax",
    "log_softmax",
    "mean",
    "std",
    "norm",
    "squeeze",
    "unsqueeze",
    "flatten",
    // In place, element by element: the receiver keeps its shape whatever the operand.
    "mul_",
    "div_",
    "add_",
    "sub_",
    "pow_",
    "clamp_",
    "fill_",
    "copy_",
    "masked_fill_",
];
/// Tensor methods that cast to a fixed dtype (`t.half()`).
const CASTS: &[&str] = &["half", "float", "bfloat16", "double", "long", "int", "bool"];
/// Calls that turn a value into a number: inside them, a tensor's values count.
const NUMBERS: &[&str] = &["int", "float", "round", "math.ceil", "math.floor"];
/// Methods that grow a list in place.
const GROWS: &[&str] = &["append", "extend", "insert"];

/// Which property of the tensor is followed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Size,
    Dtype,
}

impl Collectives<'_, '_> {
    /// Why the size (first dimension) of the tensor `expr_source`, written at `line`, can
    /// differ across ranks.
    pub fn size_dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        self.metadata(module, line, expr_source, Mode::Size)
    }

    /// Why the dtype of the tensor `expr_source`, written at `line`, can differ across ranks.
    pub fn dtype_dependence(&self, module: &Module, line: u32, expr_source: &str) -> Finding {
        self.metadata(module, line, expr_source, Mode::Dtype)
    }

    fn metadata(&self, module: &Module, line: u32, expr_source: &str, mode: Mode) -> Finding {
        let deps = self.cx.parsed(module, line, expr_source, |eval, expr, at| {
            let mut m = Meta { owner: self, mode, depth: 0, number: false };
            m.of(eval, expr, at)
        });
        Finding::from_deps(&deps)
    }
}

struct Meta<'c, 'a, 'p> {
    owner: &'c Collectives<'a, 'p>,
    mode: Mode,
    depth: usize,
    /// Following a number used as a size (`torch.zeros(n)`, `int(mask.sum())`), where values
    /// matter, rather than a tensor, whose size is its shape (`mask.sum()` is one element).
    number: bool,
}

impl Meta<'_, '_, '_> {
    /// `f` with [`Meta::number`] set to `number`.
    fn in_context(&mut self, number: bool, f: impl FnOnce(&mut Self) -> Deps) -> Deps {
        let outer = std::mem::replace(&mut self.number, number);
        let d = f(self);
        self.number = outer;
        d
    }

    fn of(&mut self, eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> Deps {
        if self.depth > MAX_DEPTH {
            return Deps::default();
        }
        self.depth += 1;
        let out = self.of_inner(eval, e, at);
        self.depth -= 1;
        out
    }

    fn value(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> Deps {
        let mut d = eval.value(e, at).whole;
        // What the caller passes is the caller's business here: followed separately.
        d.opaque = None;
        d
    }

    /// What decides the test `e` (a choice between two sizes or dtypes): as any test, so a
    /// test of a value's structure (`x is None`, `len(x.shape) >= 1`) is not decided by its
    /// data.
    fn decided(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> Deps {
        let mut d = crate::values::condition::decision(eval, e, at);
        d.opaque = None;
        d
    }

    fn of_inner(&mut self, eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> Deps {
        match e {
            Expr::Name(n) => self.name(eval, n.id.as_str(), at),
            Expr::Attribute(a) => {
                // A table source read as an attribute (`self.global_rank`) is a value.
                if let Sym::Path(p) = eval.resolve(e, at)
                    && knowledge().api(&p).is_some()
                {
                    return Self::value(eval, e, at);
                }
                self.of(eval, &a.value, at)
            }
            Expr::Subscript(s) => self.subscript(eval, e, s, at),
            Expr::Call(c) => self.call(eval, e, c, at),
            Expr::BinOp(b) => {
                // `ids + tp_rank * vocab_per_rank`: a tensor shifted by a number keeps the
                // tensor's size, whatever the number's value (only a number's own value is a
                // size, as in `torch.zeros(n + 1)`).
                if self.mode == Mode::Size && !self.number {
                    let left =
                        shown_tensor(eval, &b.left, at, 0) && shown_number(eval, &b.right, at, 0);
                    let right =
                        shown_tensor(eval, &b.right, at, 0) && shown_number(eval, &b.left, at, 0);
                    if left || right {
                        return self.of(eval, if left { &b.left } else { &b.right }, at);
                    }
                }
                let mut d = self.of(eval, &b.left, at);
                d.merge(self.of(eval, &b.right, at));
                d
            }
            Expr::UnaryOp(u) => self.of(eval, &u.operand, at),
            Expr::If(i) => {
                let mut d = self.of(eval, &i.body, at);
                d.merge(self.of(eval, &i.orelse, at));
                if self.mode == Mode::Size || !d.reasons.is_empty() || !d.params.is_empty() {
                    d.merge(Self::decided(eval, &i.test, at));
                }
                d
            }
            Expr::List(l) => self.elements(eval, &l.elts, at),
            Expr::Tuple(t) => self.elements(eval, &t.elts, at),
            Expr::Starred(s) => self.of(eval, &s.value, at),
            Expr::ListComp(c) => self.comprehension(eval, &c.elt, &c.generators, at),
            Expr::Generator(c) => self.comprehension(eval, &c.elt, &c.generators, at),
            _ => Deps::default(),
        }
    }

    fn elements(&mut self, eval: &mut Eval<'_, '_>, elements: &[Expr], at: TextSize) -> Deps {
        let mut d = Deps::default();
        for x in elements {
            d.merge(self.of(eval, x, at));
        }
        d
    }

    fn comprehension(
        &mut self,
        eval: &mut Eval<'_, '_>,
        elt: &Expr,
        generators: &[ruff_python_ast::Comprehension],
        at: TextSize,
    ) -> Deps {
        let mut d = Deps::default();
        if self.mode == Mode::Size {
            for g in generators {
                let mut length = eval.length(&g.iter, at);
                length.opaque = None;
                d.merge(length);
            }
        }
        // The element's names are the comprehension's own: only constant parts are followed.
        if !mentions_targets(elt, generators) {
            d.merge(self.of(eval, elt, at));
        }
        d
    }

    fn name(&mut self, eval: &mut Eval<'_, '_>, name: &str, at: TextSize) -> Deps {
        let Some(binding) = bindings::lookup(eval.module, eval.scope, name, at) else {
            return Deps::default();
        };
        // Filled in place by a collective that leaves it identical on every rank
        // (`dist.broadcast(t, src)` after the receivers allocated it): its size and dtype are
        // the same everywhere after it, or that collective is where the job fails.
        if let Some(agreement) = eval.agreed_between(name, &binding, at) {
            return Deps { agreed: vec![agreement], ..Deps::default() };
        }
        if self.mode == Mode::Size
            && let Source::Value(v) = binding.source
            && pads_to_agreed_size(eval, name, &binding, v)
        {
            // `if fill > 0: x = torch.cat([x, x.new_zeros(fill)])`, or `if n < longest: xp =
            // torch.cat([x, pad]) else: xp = x`: the test decides only whether a rank still
            // has to pad up to the agreed size; the ranks that keep the tensor as it is
            // already hold that size.
            return Deps::default();
        }
        let mut d = match binding.source {
            Source::Value(v) | Source::WithItem(v) | Source::Augmented(v) => {
                let mut d = self.in_scope(eval, &binding, |m, eval| m.of(eval, v, binding.at));
                if self.mode == Mode::Size && is_empty_list(v) {
                    d.merge(self.grown(eval, name, &binding, at));
                }
                d
            }
            Source::Element(v, i) => {
                self.in_scope(eval, &binding, |m, eval| m.element(eval, v, i, binding.at))
            }
            Source::LoopItem(iter) => {
                self.in_scope(eval, &binding, |m, eval| m.item(eval, iter, None, binding.at))
            }
            Source::LoopElement(iter, i) => {
                self.in_scope(eval, &binding, |m, eval| m.item(eval, iter, Some(i), binding.at))
            }
            Source::LoopCounter(_) if self.mode == Mode::Size => {
                let mut d = eval.follow(name, binding).whole;
                d.opaque = None;
                d
            }
            Source::Parameter => self.parameter(eval, name, &binding),
            _ => Deps::default(),
        };
        d.merge(self.control_between(eval, name, &binding, at));
        d
    }

    /// Runs `f` with the evaluator in the binding's scope.
    fn in_scope<'m>(
        &mut self,
        eval: &mut Eval<'_, 'm>,
        binding: &Binding<'m>,
        f: impl FnOnce(&mut Self, &mut Eval<'_, 'm>) -> Deps,
    ) -> Deps {
        let outer = std::mem::replace(&mut eval.scope, binding.scope);
        let d = f(self, eval);
        eval.scope = outer;
        d
    }

    /// `t.half()` and the other casting methods, `t.to(d)`/`t.type(d)` with a dtype argument
    /// (not `t.to(device)`).
    fn is_cast(&mut self, eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> bool {
        let Expr::Call(c) = e else { return false };
        let Expr::Attribute(a) = &*c.func else { return false };
        match a.attr.id.as_str() {
            m if CASTS.contains(&m) => true,
            "to" | "type" => {
                c.arguments.find_keyword("dtype").is_some()
                    || c.arguments.args.iter().any(|arg| self.could_be_dtype(eval, arg, at))
            }
            _ => false,
        }
    }

    /// The tests of the `if`s that decide whether the binding runs, short of those that also
    /// hold the use: `x = x[:n]` under `if fault == rank:` resizes `x` on some ranks only.
    ///
    /// A condition changes the tensor on some ranks only when the others keep an older value:
    /// the binding rewrites the name from itself (`x = x[:n]`, `x += pad`), or no other clause
    /// of the `if` binds the name. A buffer made on both sides (`if root: buf = torch.empty(n)
    /// else: buf = torch.zeros(n)`, how roots and non-roots prepare a broadcast) is judged by
    /// its own size. For a dtype the binding must also cast (`t = t.half()`): a buffer allocated
    /// on some ranks is not a cast, and a test on a tensor's own dtype (`if t.dtype != d: t =
    /// t.to(d)`) makes every rank end with `d`.
    fn control_between<'m>(
        &mut self,
        eval: &mut Eval<'_, 'm>,
        name: &str,
        binding: &Binding<'m>,
        use_at: TextSize,
    ) -> Deps {
        let mut out = Deps::default();
        let value = match binding.source {
            Source::Parameter | Source::Import { .. } => return out,
            Source::Value(v) | Source::Augmented(v) | Source::WithItem(v) => Some(v),
            _ => None,
        };
        let rewrites_itself = matches!(binding.source, Source::Augmented(_))
            || value.is_some_and(|v| bindings::mentions(v, name));
        if self.mode == Mode::Dtype && !value.is_some_and(|v| self.is_cast(eval, v, binding.at)) {
            return out;
        }
        let module = eval.module;
        let Some(path) = module.path(module.line_of(binding.at)) else { return out };
        let levels: Vec<_> = path.scope_levels(module).to_vec();
        for level in &levels {
            let Some(owner @ Stmt::If(s)) = level.owner else { continue };
            if s.range().contains(use_at) {
                continue;
            }
            if !rewrites_itself && other_clause_binds(module, owner, level.slot, binding, name) {
                continue;
            }
            let tests: Vec<&Expr> = match level.slot {
                Slot::Body => vec![&s.test],
                Slot::Clause(i) => std::iter::once(&*s.test)
                    .chain(s.elif_else_clauses.iter().take(i + 1).filter_map(|c| c.test.as_ref()))
                    .collect(),
                _ => continue,
            };
            for t in tests {
                if self.mode == Mode::Dtype && reads_dtype(t) {
                    continue;
                }
                let hop = format!(
                    "{} under `if {}` (line {})",
                    quote(module.text(binding_range(module, binding))),
                    crate::syntax::expr::snippet(module.text(t.range())),
                    module.line_of(s.start())
                );
                let outer = std::mem::replace(&mut eval.scope, binding.scope);
                let d = Self::decided(eval, t, s.start());
                eval.scope = outer;
                out.merge(d.hop(&hop));
            }
        }
        out
    }

    fn subscript(
        &mut self,
        eval: &mut Eval<'_, '_>,
        e: &Expr,
        s: &ruff_python_ast::ExprSubscript,
        at: TextSize,
    ) -> Deps {
        if self.mode == Mode::Dtype {
            return self.of(eval, &s.value, at);
        }
        // `x.shape[0]`, `x.size()[0]`: the first dimension; other dimensions are features.
        if let Expr::Attribute(a) = &*s.value
            && a.attr.id.as_str() == "shape"
        {
            return match literal_index(&s.slice) {
                Some(0) | None => self.of(eval, &a.value, at),
                Some(_) => Deps::default(),
            };
        }
        if let Sym::Path(p) = eval.resolve(&s.value, at)
            && p == "os.environ"
        {
            return Self::value(eval, e, at);
        }
        let mut d = self.of(eval, &s.value, at);
        match &*s.slice {
            Expr::Slice(sl) => d.merge(Self::cut(eval, sl, at)),
            // `x[:, :n]`, `x[..., :n]`: a cut along any dimension changes the shape, and every
            // rank must send the same shape.
            Expr::Tuple(t) => {
                for sl in t.elts.iter().filter_map(Expr::as_slice_expr) {
                    d.merge(Self::cut(eval, sl, at));
                }
            }
            Expr::NumberLiteral(_) | Expr::StringLiteral(_) => {}
            index if selects(index) => d.merge(selected(eval, index, at)),
            // `sizes[rank]`: a rank reads its own number; `chunks[rank]` of a split: its own
            // piece, and the last piece of a split can be shorter. Any other list is taken to
            // hold equal pieces (`dist.all_gather(parts, parts[rank])`: each rank sends its slot
            // of the output list).
            index if self.number || crate::values::length::from_split(eval, &s.value, at) => {
                d.merge(Self::value(eval, index, at));
            }
            _ => {}
        }
        d
    }

    /// What the length of the cut `sl` depends on: its bounds and step, or only the width and
    /// step of a window whose end is its start plus an amount (`x[start : start + n]`,
    /// `x[rank * n : (rank + 1) * n]`: every rank's window is `n` long wherever it starts).
    /// A width rounded up (`n = math.ceil(len(x) / world)`) lets the last windows run past the
    /// end and come out shorter, so its bounds count again.
    fn cut(eval: &mut Eval<'_, '_>, sl: &ruff_python_ast::ExprSlice, at: TextSize) -> Deps {
        let mut d = Deps::default();
        let width = sl
            .lower
            .as_deref()
            .zip(sl.upper.as_deref())
            .and_then(|(l, u)| window_width(l, u))
            .filter(|w| !rounds_up(eval, w, at, 0));
        let bounds: Vec<&Expr> = match width {
            Some(width) => [Some(width), sl.step.as_deref()].into_iter().flatten().collect(),
            None => [&sl.lower, &sl.upper, &sl.step].into_iter().flatten().map(|b| &**b).collect(),
        };
        for bound in bounds {
            d.merge(Self::value(eval, bound, at));
        }
        d
    }

    fn call(&mut self, eval: &mut Eval<'_, '_>, e: &Expr, c: &ExprCall, at: TextSize) -> Deps {
        let method = match &*c.func {
            Expr::Attribute(a) => Some(a.attr.id.as_str()),
            _ => None,
        };
        match eval.resolve(&c.func, at) {
            Sym::Path(p) => {
                if let Some(api) = knowledge().api(&p) {
                    return match api.role {
                        // Every rank gets the same result (`accelerator.pad_across_processes`).
                        Role::Collective if api.agrees == Some(Agrees::Return) => Deps::default(),
                        Role::Rank
                        | Role::Environment
                        | Role::Time
                        | Role::Exception
                        | Role::Config => {
                            if self.mode == Mode::Size {
                                Self::value(eval, e, at)
                            } else {
                                Deps::default()
                            }
                        }
                        Role::Data => {
                            let mut d = eval.length(e, at);
                            d.opaque = None;
                            d
                        }
                        Role::Pad => self.padded(eval, c, at),
                        Role::Concat if self.mode == Mode::Size && fills_up(eval, c, at) => {
                            Deps::default()
                        }
                        Role::FromData if self.mode == Mode::Size => {
                            self.made_from_data(eval, c, at)
                        }
                        // A random draw has the size it is asked for; other rows, what they
                        // are given.
                        _ => self.generic(eval, c, method, at),
                    };
                }
                if self.mode == Mode::Size && NUMBERS.contains(&p.as_str()) {
                    return self.in_context(true, |m| m.generic(eval, c, method, at));
                }
                if self.mode == Mode::Size && p == "len" {
                    return c
                        .arguments
                        .args
                        .first()
                        .map_or_else(Deps::default, |a| self.of(eval, a, at));
                }
                if self.mode == Mode::Size && p == "range" {
                    return Self::values(eval, c, at);
                }
            }
            Sym::Function(f) => return self.returned(eval, &f, c, at, None),
            Sym::Class(ClassRef { local: Some(_), .. }) => return Deps::default(),
            _ => {}
        }
        self.generic(eval, c, method, at)
    }

    /// `F.pad(x, amounts)`: as large as `x` plus the amounts; padded up to a size agreed
    /// through a collective (the amounts read a gathered maximum), the same on every rank.
    fn padded(&mut self, eval: &mut Eval<'_, '_>, c: &ExprCall, at: TextSize) -> Deps {
        let input = c.arguments.find_argument_value("input", 0);
        let amounts = c.arguments.find_argument_value("pad", 1);
        let mut d = input.map_or_else(Deps::default, |x| self.of(eval, x, at));
        if self.mode == Mode::Dtype {
            return d;
        }
        if let Some(amounts) = amounts {
            let by = eval.value(amounts, at).whole;
            if !by.agreed.is_empty() {
                return Deps::default();
            }
            d.merge(self.in_context(true, |m| m.of(eval, amounts, at)));
        }
        d
    }

    /// `torch.tensor(data)`: one element per item of `data`. A list or tuple written out has
    /// as many items as it lists, whatever values they hold (`torch.tensor([start, end,
    /// rank])` is three elements on every rank); anything else is as large as it is.
    fn made_from_data(&mut self, eval: &mut Eval<'_, '_>, c: &ExprCall, at: TextSize) -> Deps {
        let Some(data) = c.arguments.find_argument_value("data", 0) else {
            return Deps::default();
        };
        match data {
            Expr::List(ruff_python_ast::ExprList { elts, .. })
            | Expr::Tuple(ruff_python_ast::ExprTuple { elts, .. })
                if !elts.iter().any(Expr::is_starred_expr) =>
            {
                Deps::default()
            }
            _ => self.in_context(false, |m| m.of(eval, data, at)),
        }
    }

    /// `x.narrow(dim, start, length)`: `length` long along `dim`, as long as `x` along the
    /// others. Where it starts is no size (`buf.narrow(0, n * rank, n)`: each rank's own slot,
    /// `n` long on every rank).
    fn narrowed(&mut self, eval: &mut Eval<'_, '_>, c: &ExprCall, at: TextSize) -> Deps {
        let Expr::Attribute(a) = &*c.func else { return Deps::default() };
        let dim = c.arguments.find_argument_value("dim", 0).map(literal_index);
        let length = c.arguments.find_argument_value("length", 2);
        let mut d = Deps::default();
        if dim != Some(Some(0)) {
            d.merge(self.in_context(false, |m| m.of(eval, &a.value, at)));
        }
        if !matches!(dim, Some(Some(other)) if other != 0)
            && let Some(length) = length
        {
            d.merge(self.of(eval, length, at));
        }
        d
    }

    /// A call the table does not name: the sizes (dtype) of what it is given.
    fn generic(
        &mut self,
        eval: &mut Eval<'_, '_>,
        c: &ExprCall,
        method: Option<&str>,
        at: TextSize,
    ) -> Deps {
        match self.mode {
            Mode::Size => {
                if let Some(m) = method {
                    if SELECTING.contains(&m) {
                        return selected(eval, &c.func, at);
                    }
                    if READS_VALUES.contains(&m) {
                        // As a tensor, `x.sum()` (no dimension) is one element on every rank
                        // and `x.sum(-1)` keeps the other dimensions of `x`: the first one is
                        // `x`'s own, unless that is the one reduced (`x.sum(0)`); as a number
                        // (`int(x.sum())`, `x.sum().item()`) it is read from the values.
                        let number = self.number || m == "item";
                        // `torch.tensor(sorted(x.tolist()))`: one item per row of `x`.
                        if !number && m == "tolist" {
                            let Expr::Attribute(a) = &*c.func else { return Deps::default() };
                            return self.of(eval, &a.value, at);
                        }
                        if !number {
                            let Expr::Attribute(a) = &*c.func else { return Deps::default() };
                            let dim = c
                                .arguments
                                .args
                                .first()
                                .or_else(|| c.arguments.find_keyword("dim").map(|k| &k.value));
                            return match dim.map(literal_index) {
                                None | Some(Some(0)) => Deps::default(),
                                Some(_) => self.in_context(false, |m| m.of(eval, &a.value, at)),
                            };
                        }
                        return selected(eval, &c.func, at);
                    }
                    if m == "narrow" {
                        return self.narrowed(eval, c, at);
                    }
                    if matches!(m, "size" | "numel" | "__len__") {
                        let Expr::Attribute(a) = &*c.func else { return Deps::default() };
                        return match c.arguments.args.first().map(literal_index) {
                            None | Some(Some(0)) => {
                                self.in_context(false, |m| m.of(eval, &a.value, at))
                            }
                            _ => Deps::default(),
                        };
                    }
                }
                let mut d = match &*c.func {
                    Expr::Attribute(a) => self.in_context(false, |m| m.of(eval, &a.value, at)),
                    _ => Deps::default(),
                };
                if !method.is_some_and(|m| NOT_SIZES.contains(&m)) {
                    for arg in &c.arguments.args {
                        d.merge(self.of(eval, arg, at));
                    }
                }
                d
            }
            Mode::Dtype => {
                if matches!(method, Some("to" | "type")) {
                    // The cast decides, when an argument is a dtype; a device argument leaves the
                    // receiver's dtype.
                    let mut d = match &*c.func {
                        Expr::Attribute(a) => self.of(eval, &a.value, at),
                        _ => Deps::default(),
                    };
                    for arg in &c.arguments.args {
                        if self.could_be_dtype(eval, arg, at) {
                            d.merge(self.dtype_value(eval, arg, at));
                        }
                    }
                    return d;
                }
                if let Some(kw) = c.arguments.find_keyword("dtype") {
                    return self.dtype_value(eval, &kw.value, at);
                }
                match &*c.func {
                    Expr::Attribute(a) if !method.is_some_and(|m| CASTS.contains(&m)) => {
                        self.of(eval, &a.value, at)
                    }
                    Expr::Attribute(_) => Deps::default(),
                    _ => {
                        let mut d = Deps::default();
                        for arg in &c.arguments.args {
                            d.merge(self.of(eval, arg, at));
                        }
                        d
                    }
                }
            }
        }
    }

    fn values(eval: &mut Eval<'_, '_>, c: &ExprCall, at: TextSize) -> Deps {
        let mut d = Deps::default();
        for arg in &c.arguments.args {
            d.merge(Self::value(eval, arg, at));
        }
        d
    }

    /// The dependence of a dtype value (`comm_dtype`), followed into callers.
    fn dtype_value(&mut self, eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> Deps {
        // `dtype=x.dtype`: the dtype of `x`, not what its values depend on (`inputs[rank]`
        // picks a rank's own tensor, not its own dtype).
        if let Expr::Attribute(a) = e
            && a.attr.id.as_str() == "dtype"
        {
            let mode = std::mem::replace(&mut self.mode, Mode::Dtype);
            let d = self.of(eval, &a.value, at);
            self.mode = mode;
            return d;
        }
        let mut d = eval.value(e, at).whole;
        d.opaque = None;
        // Rank-local *data* does not choose a dtype: `x.to(y.dtype)` has y's dtype.
        d.reasons.retain(|r| {
            r.kind != LocalData && r.kind != crate::syntax::types::DependenceKind::Exception
        });
        let params = std::mem::take(&mut d.params);
        for p in params {
            d.merge(self.through_callers(eval, &p, true));
        }
        d.length_params.clear();
        d
    }

    /// Whether `e` can be one of the table's dtypes (a dict of them indexed, a conditional
    /// choice, `torch.bfloat16`, a parameter whose callers pass one).
    fn could_be_dtype(&mut self, eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> bool {
        if self.depth > MAX_DEPTH {
            return false;
        }
        self.depth += 1;
        let out = match e {
            Expr::Attribute(_) => match eval.resolve(e, at) {
                Sym::Path(p) => knowledge().is_dtype(&p),
                _ => matches!(e, Expr::Attribute(a) if a.attr.id.as_str() == "dtype"),
            },
            Expr::If(i) => {
                self.could_be_dtype(eval, &i.body, at) || self.could_be_dtype(eval, &i.orelse, at)
            }
            Expr::Subscript(s) => match &*s.value {
                Expr::Dict(d) => d.items.iter().any(|it| self.could_be_dtype(eval, &it.value, at)),
                v => self.could_be_dtype(eval, v, at),
            },
            Expr::Dict(d) => d.items.iter().any(|it| self.could_be_dtype(eval, &it.value, at)),
            // `DTYPES.get(name)`, or a project function annotated `-> torch.dtype`.
            Expr::Call(c) => {
                (matches!(&*c.func, Expr::Attribute(a) if a.attr.id.as_str() == "get")
                    && matches!(&*c.func, Expr::Attribute(a) if self.could_be_dtype(eval, &a.value, at)))
                    || eval.return_annotation(c).is_some_and(|t| t == "torch.dtype")
            }
            Expr::Name(n) => match bindings::lookup(eval.module, eval.scope, n.id.as_str(), at) {
                Some(b) => match b.source {
                    Source::Value(v) => {
                        let outer = std::mem::replace(&mut eval.scope, b.scope);
                        let r = self.could_be_dtype(eval, v, b.at);
                        eval.scope = outer;
                        r
                    }
                    // A parameter used as `.to(p)` next to no other argument: the caller's call.
                    Source::Parameter => true,
                    _ => false,
                },
                None => false,
            },
            _ => false,
        };
        self.depth -= 1;
        out
    }

    /// Element `index` of what `v` evaluates to (a tuple a project function returns).
    fn element(&mut self, eval: &mut Eval<'_, '_>, v: &Expr, index: usize, at: TextSize) -> Deps {
        if let Expr::Call(c) = v
            && let Sym::Function(f) = eval.resolve(&c.func, at)
        {
            return self.returned(eval, &f, c, at, Some(index));
        }
        self.of(eval, v, at)
    }

    /// What iterating `iter` yields: a generator of the project yields what its `yield`s
    /// say; a data loader's batches have its batch size, short on the last one when its
    /// length differs; other items are taken to have equal sizes.
    fn item(
        &mut self,
        eval: &mut Eval<'_, '_>,
        iter: &Expr,
        index: Option<usize>,
        at: TextSize,
    ) -> Deps {
        if let Expr::Call(c) = iter {
            if let Some(name) = crate::syntax::expr::last_segment(&c.func)
                && matches!(&*c.func, Expr::Name(_))
            {
                match (name, index) {
                    ("enumerate", Some(1)) => {
                        if let Some(a) = c.arguments.args.first() {
                            return self.item(eval, a, None, at);
                        }
                    }
                    ("zip", Some(i)) => {
                        if let Some(a) = c.arguments.args.get(i) {
                            return self.item(eval, a, None, at);
                        }
                    }
                    _ => {}
                }
            }
            match eval.resolve(&c.func, at) {
                Sym::Function(f) => return self.returned(eval, &f, c, at, index),
                Sym::Path(p) if knowledge().api(&p).is_some_and(|a| a.role == Role::Data) => {
                    return self.loader(eval, iter, at);
                }
                _ => {}
            }
        }
        if let Sym::Instance(ClassRef { qualified: Some(q), .. }) = eval.resolve(iter, at)
            && knowledge().api(&q).is_some_and(|a| a.role == Role::Data)
        {
            return self.loader(eval, iter, at);
        }
        Deps::default()
    }

    fn loader(&mut self, eval: &mut Eval<'_, '_>, iter: &Expr, at: TextSize) -> Deps {
        if self.mode == Mode::Dtype {
            return Deps::default();
        }
        let mut d = eval.length(iter, at);
        d.opaque = None;
        // `DataLoader(TensorDataset(val_x[rank::world]))` inside a function given `rank`: what
        // its callers pass decides how many items each rank's loader has.
        let params = std::mem::take(&mut d.params);
        let length_params = std::mem::take(&mut d.length_params);
        for p in params {
            d.merge(self.passed(eval, &p, false));
        }
        for p in length_params {
            d.merge(self.passed(eval, &p, true));
        }
        d
    }

    /// What the calls in view pass for the parameter `name` of the function in scope, by value
    /// (or by length), their own parameters followed further out; a launcher's process index
    /// is the rank.
    fn passed(&mut self, eval: &mut Eval<'_, '_>, name: &str, length: bool) -> Deps {
        let Some(def) = eval.scope.function else { return Deps::default() };
        if self.depth > MAX_DEPTH / 2 {
            return Deps::default();
        }
        let mut d = Deps::default();
        for call in self.owner.calls_of(eval.module, def) {
            let at = call.call.start();
            let shown = crate::syntax::expr::snippet(eval.module.text(call.call.func.range()));
            let line = eval.module.line_of(at);
            if call.passes_process_index(name) {
                d.merge(Deps::reason(
                    crate::syntax::types::DependenceKind::RankId,
                    format!("`{name}`: the process index `{shown}` passes (line {line})"),
                ));
                continue;
            }
            let Some(arg) = call.argument(name) else { continue };
            let mut caller = Eval::new(self.owner.cx, eval.module, call.scope, 0);
            let mut part =
                if length { caller.length(arg, at) } else { caller.value(arg, at).whole };
            part.opaque = None;
            let params = std::mem::take(&mut part.params);
            let length_params = std::mem::take(&mut part.length_params);
            self.depth += 1;
            for p in params {
                part.merge(self.passed(&mut caller, &p, false));
            }
            for p in length_params {
                part.merge(self.passed(&mut caller, &p, true));
            }
            self.depth -= 1;
            let what = if length { "the length of " } else { "" };
            let hop = format!(
                "{what}`{name}` = {} passed by `{shown}` (line {line})",
                quote(eval.module.text(arg.range())),
            );
            d.merge(part.hop(&hop));
        }
        d
    }

    /// The size (dtype) of what the project function `f` returns or yields (element `index`
    /// of a tuple), its parameters replaced by what the call passes.
    fn returned(
        &mut self,
        eval: &mut Eval<'_, '_>,
        f: &FnRef,
        c: &ExprCall,
        at: TextSize,
        index: Option<usize>,
    ) -> Deps {
        let module: &Module = f.module.as_deref().unwrap_or(eval.module);
        let Some(def) = def_at(module, f.def) else { return Deps::default() };
        let mut exits: Vec<&Expr> = Vec::new();
        let mut generator = false;
        tree::walk_scope(&def.body, &mut |stmt, _| {
            for e in tree::header_exprs(stmt) {
                crate::syntax::expr::walk(e, &mut |x| {
                    if let Expr::Yield(y) = x
                        && let Some(v) = &y.value
                    {
                        generator = true;
                        exits.push(v);
                    }
                });
            }
        });
        if !generator {
            tree::walk_scope(&def.body, &mut |stmt, _| {
                if let Stmt::Return(r) = stmt
                    && let Some(v) = &r.value
                {
                    exits.push(v);
                }
            });
        }
        let mut inner = Eval::new(self.owner.cx, module, function_scope(def), 0);
        let mut d = Deps::default();
        for v in exits {
            let part = match (v, index) {
                (Expr::Tuple(t), Some(i)) => t.elts.get(i),
                (v, _) => Some(v),
            };
            if let Some(part) = part {
                d.merge(self.of(&mut inner, part, part.start()));
            }
        }
        // Parameters become what the call passes (nothing passed: the default, the same
        // everywhere).
        let parameters: Vec<String> = def
            .parameters
            .iter_non_variadic_params()
            .map(|p| p.parameter.name.id.to_string())
            .collect();
        // A parameter whose value counts (a slice bound, a size argument) becomes the value
        // passed; one whose own size (dtype) counts (`return batch.shape[0]`, `return x[:n]`),
        // the size (dtype) of what is passed: `find_batch_size(inputs)` of a loader's batch is
        // the batch size, not something read from the batch's values.
        let params = std::mem::take(&mut d.params);
        let structure_only = std::mem::take(&mut d.structure_only);
        let sized = std::mem::take(&mut d.length_params);
        let by_value = params.into_iter().map(|p| (p, true));
        for (p, value) in by_value.chain(sized.into_iter().map(|p| (p, false))) {
            if let Some(arg) = crate::values::value::argument_for(&parameters, f.is_method, c, &p) {
                let hop = format!(
                    "`{p}` = {} in the call of `{}` (line {})",
                    quote(eval.text(arg)),
                    def.name.id,
                    eval.line_of(c.start())
                );
                let v = if !value {
                    self.of(eval, arg, at)
                } else if structure_only.contains(&p) {
                    // Only tested for its structure (`len(x.shape) >= 1`, `x is None`).
                    let mut v = crate::values::condition::structural(Self::value(eval, arg, at));
                    v.structure_only.clone_from(&v.params);
                    v
                } else {
                    Self::value(eval, arg, at)
                };
                d.merge(v.hop(&hop));
            }
        }
        d
    }

    /// A parameter: what the callers in view pass for it.
    fn parameter(&mut self, eval: &mut Eval<'_, '_>, name: &str, binding: &Binding<'_>) -> Deps {
        let _ = binding;
        self.through_callers(eval, name, false)
    }

    fn through_callers(&mut self, eval: &mut Eval<'_, '_>, name: &str, dtype_value: bool) -> Deps {
        let Some(def) = eval.scope.function else { return Deps::default() };
        // Nobody in view calls it (or the callers are too far out): the caller decides, by
        // the value it passes for a dtype, else by the size (dtype) of the tensor it passes.
        let unresolved = || if dtype_value { Deps::param(name) } else { Deps::length_param(name) };
        if self.depth > MAX_DEPTH / 2 {
            return unresolved();
        }
        let calls = self.owner.calls_of(eval.module, def);
        if calls.is_empty() {
            return unresolved();
        }
        let mut d = Deps::default();
        for call in calls {
            if let Some(arg) = call.argument(name) {
                let mut caller = Eval::new(self.owner.cx, eval.module, call.scope, 0);
                let at = call.call.start();
                let hop = format!(
                    "`{name}` = {} passed by `{}` (line {})",
                    quote(eval.module.text(arg.range())),
                    crate::syntax::expr::snippet(eval.module.text(call.call.func.range())),
                    eval.module.line_of(at)
                );
                self.depth += 1;
                let part = if dtype_value {
                    if self.could_be_dtype(&mut caller, arg, at) {
                        self.dtype_value(&mut caller, arg, at)
                    } else {
                        Deps::default()
                    }
                } else {
                    self.of(&mut caller, arg, at)
                };
                self.depth -= 1;
                d.merge(part.hop(&hop));
            }
        }
        d
    }

    /// `parts = []` grown by `parts.append(x)` later in the scope: as many elements as the
    /// loops around the appends run, each the size of what is appended.
    fn grown<'m>(
        &mut self,
        eval: &mut Eval<'_, 'm>,
        name: &str,
        binding: &Binding<'m>,
        use_at: TextSize,
    ) -> Deps {
        let mut appends: Vec<(&Stmt, &ExprCall)> = Vec::new();
        let module = eval.module;
        tree::walk_scope(binding.scope.suite, &mut |stmt, _| {
            if stmt.start() < binding.effective || stmt.start() >= use_at {
                return;
            }
            let Stmt::Expr(s) = stmt else { return };
            let Expr::Call(c) = &*s.value else { return };
            if let Expr::Attribute(a) = &*c.func
                && GROWS.contains(&a.attr.id.as_str())
                && matches!(&*a.value, Expr::Name(n) if n.id.as_str() == name)
            {
                appends.push((stmt, c));
            }
        });
        let mut d = Deps::default();
        let outer = std::mem::replace(&mut eval.scope, binding.scope);
        let grow_at: Vec<TextSize> = appends.iter().map(|(s, _)| s.start()).collect();
        for (stmt, c) in appends {
            for arg in &c.arguments.args {
                d.merge(self.of(eval, arg, stmt.start()));
            }
            // How many times it runs: the loops and `if`s around it, short of the use's.
            let Some(path) = module.path(module.line_of(stmt.start())) else { continue };
            for level in path.scope_levels(module).to_vec() {
                let Some(owner) = level.owner else { continue };
                if owner.range().contains(use_at) {
                    continue;
                }
                match (owner, level.slot) {
                    (Stmt::For(f), Slot::Body) => {
                        let mut length = eval.length(&f.iter, f.start());
                        length.opaque = None;
                        d.merge(length.hop(&format!(
                            "`{name}` grows once per item of {} (line {})",
                            quote(module.text(f.iter.range())),
                            module.line_of(f.start())
                        )));
                    }
                    (Stmt::While(w), Slot::Body) => d.merge(Self::value(eval, &w.test, w.start())),
                    // `if i == rank: parts.append(own) else: parts.append(empty)`: one item
                    // either way; each is judged by its own size.
                    (Stmt::If(i), Slot::Body | Slot::Clause(_))
                        if !grows_in_every_clause(owner, &grow_at) =>
                    {
                        d.merge(Self::value(eval, &i.test, i.start()));
                    }
                    _ => {}
                }
            }
        }
        eval.scope = outer;
        d
    }
}

/// The number of elements a boolean index or a selecting method keeps depends on the values.
fn selected(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> Deps {
    let mut d = eval.value(e, at).whole;
    let uniform =
        d.reasons.is_empty() && d.params.is_empty() && d.opaque.is_none() && !d.agreed.is_empty();
    if uniform {
        return Deps::default();
    }
    d.opaque = None;
    d.params.clear();
    d.length_params.clear();
    let mut out =
        Deps::reason(LocalData, format!("{} depends on the tensor's values", quote(eval.text(e))));
    out.merge(d);
    out
}

/// How many assignments [`shown_tensor`] and [`shown_number`] follow.
const MAX_TYPE_HOPS: usize = 4;

/// Tensor methods that return a plain number or list, not a tensor.
const SCALAR_METHODS: &[&str] =
    &["item", "tolist", "size", "numel", "nelement", "dim", "element_size", "get_device"];

/// Whether `e` is shown to be a tensor: what a `torch` function returns (one of the elements of
/// `torch.topk(...)`), a tensor method's result, arithmetic with one, or a name bound to one.
fn shown_tensor(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize, depth: usize) -> bool {
    if depth > MAX_TYPE_HOPS {
        return false;
    }
    match e {
        Expr::Call(c) => match eval.resolve(&c.func, at) {
            Sym::Path(p) => {
                p.starts_with("torch.")
                    && !p.starts_with("torch.distributed.")
                    && knowledge().api(&p).is_none_or(|a| {
                        !matches!(a.role, Role::Rank | Role::Uniform | Role::Config)
                    })
            }
            _ => match &*c.func {
                Expr::Attribute(a) if !SCALAR_METHODS.contains(&a.attr.id.as_str()) => {
                    shown_tensor(eval, &a.value, at, depth + 1)
                }
                _ => false,
            },
        },
        Expr::BinOp(b) => {
            shown_tensor(eval, &b.left, at, depth + 1)
                || shown_tensor(eval, &b.right, at, depth + 1)
        }
        Expr::Name(n) => {
            let Some(binding) = bindings::lookup(eval.module, eval.scope, n.id.as_str(), at) else {
                return false;
            };
            match binding.source {
                Source::Value(v) | Source::Augmented(v) | Source::Element(v, _) => {
                    shown_tensor(eval, v, binding.at, depth + 1)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `e` is shown to be a plain number: a literal, a rank or size the table reads
/// (`mpu.get_tensor_model_parallel_rank()`), a dimension read (`x.shape[-1]`, `x.size(0)`,
/// `len(x)`, `int(...)`), arithmetic on numbers, or a name bound to one.
fn shown_number(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize, depth: usize) -> bool {
    if depth > MAX_TYPE_HOPS {
        return false;
    }
    match e {
        Expr::NumberLiteral(_) => true,
        Expr::BinOp(b) => {
            shown_number(eval, &b.left, at, depth + 1)
                && shown_number(eval, &b.right, at, depth + 1)
        }
        Expr::UnaryOp(u) => shown_number(eval, &u.operand, at, depth + 1),
        Expr::Subscript(s) => {
            matches!(&*s.value, Expr::Attribute(a) if a.attr.id.as_str() == "shape")
        }
        Expr::Call(c) => {
            if let Expr::Attribute(a) = &*c.func
                && matches!(a.attr.id.as_str(), "size" | "numel" | "dim")
                && c.arguments.args.len() <= 1
            {
                return a.attr.id.as_str() != "size" || c.arguments.args.len() == 1;
            }
            match eval.resolve(&c.func, at) {
                Sym::Path(p) => {
                    matches!(p.as_str(), "len" | "int")
                        || knowledge()
                            .api(&p)
                            .is_some_and(|a| matches!(a.role, Role::Rank | Role::Uniform))
                }
                _ => false,
            }
        }
        Expr::Name(n) => {
            let Some(binding) = bindings::lookup(eval.module, eval.scope, n.id.as_str(), at) else {
                return false;
            };
            match binding.source {
                Source::Value(v) => shown_number(eval, v, binding.at, depth + 1),
                // `start, end = VocabUtility.vocab_range_from_per_partition_vocab_size(...)`:
                // an element of what a table row returns as numbers.
                Source::Element(Expr::Call(c), index) => match eval.resolve(&c.func, binding.at) {
                    Sym::Path(p) => knowledge().api(&p).is_some_and(|a| {
                        a.returns.get(index).is_some_and(|t| matches!(t.as_str(), "int" | "float"))
                    }),
                    _ => false,
                },
                _ => false,
            }
        }
        _ => false,
    }
}

/// The amount a window's end adds to its start: `n` of `s : s + n` (or `n + s`) and of
/// `r * n : (r + 1) * n` (or `n * r : n * (r + 1)`); `None` for other bounds.
fn window_width<'e>(lower: &'e Expr, upper: &'e Expr) -> Option<&'e Expr> {
    use ruff_python_ast::Operator::{Add, Mult};
    use ruff_python_ast::comparable::ComparableExpr;
    let same = |a: &Expr, b: &Expr| ComparableExpr::from(a) == ComparableExpr::from(b);
    let plus_one = |a: &Expr, b: &Expr| match b {
        Expr::BinOp(p) if p.op == Add => {
            let one = |e: &Expr| crate::syntax::expr::int_literal(e) == Some(1);
            (same(&p.left, a) && one(&p.right)) || (one(&p.left) && same(&p.right, a))
        }
        _ => false,
    };
    if let Expr::BinOp(u) = upper
        && u.op == Add
    {
        if same(&u.left, lower) {
            return Some(&u.right);
        }
        if same(&u.right, lower) {
            return Some(&u.left);
        }
    }
    let (Expr::BinOp(l), Expr::BinOp(u)) = (lower, upper) else { return None };
    if l.op != Mult || u.op != Mult {
        return None;
    }
    if same(&l.right, &u.right) && plus_one(&l.left, &u.left) {
        return Some(&l.right);
    }
    if same(&l.left, &u.left) && plus_one(&l.right, &u.right) {
        return Some(&l.left);
    }
    None
}

/// Whether `e` is a division rounded up, or a name bound to one: `math.ceil(a / b)`,
/// `-(-a // b)`, `(a + b - 1) // b`.
fn rounds_up(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize, depth: usize) -> bool {
    use ruff_python_ast::Operator::{Add, FloorDiv, Sub};
    if depth > MAX_TYPE_HOPS {
        return false;
    }
    match e {
        Expr::Call(c) => match eval.resolve(&c.func, at) {
            Sym::Path(p) if matches!(p.as_str(), "math.ceil" | "numpy.ceil" | "torch.ceil") => true,
            Sym::Path(p) if p == "int" => {
                c.arguments.args.first().is_some_and(|a| rounds_up(eval, a, at, depth + 1))
            }
            _ => false,
        },
        Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::USub => {
            matches!(&*u.operand, Expr::BinOp(b) if b.op == FloorDiv
                && matches!(&*b.left, Expr::UnaryOp(n) if n.op == ruff_python_ast::UnaryOp::USub))
        }
        Expr::BinOp(b) if b.op == FloorDiv => match &*b.left {
            Expr::BinOp(l) if l.op == Sub => matches!(&*l.left, Expr::BinOp(s) if s.op == Add),
            Expr::BinOp(l) if l.op == Add => {
                matches!(&*l.right, Expr::BinOp(s) if s.op == Sub)
                    || matches!(&*l.left, Expr::BinOp(s) if s.op == Sub)
            }
            _ => false,
        },
        Expr::Name(n) => {
            let Some(binding) = bindings::lookup(eval.module, eval.scope, n.id.as_str(), at) else {
                return false;
            };
            match binding.source {
                Source::Value(v) => rounds_up(eval, v, binding.at, depth + 1),
                _ => false,
            }
        }
        _ => false,
    }
}

/// `x > 0`, `~m`, `m & n`, `t.bool()`, `torch.isfinite(t)`: an index that selects by value.
fn selects(index: &Expr) -> bool {
    match index {
        Expr::Compare(_) => true,
        Expr::UnaryOp(u) => u.op == ruff_python_ast::UnaryOp::Invert,
        Expr::BinOp(b) => {
            matches!(b.op, ruff_python_ast::Operator::BitAnd | ruff_python_ast::Operator::BitOr)
                && (selects(&b.left) || selects(&b.right))
        }
        Expr::Call(c) => matches!(
            crate::syntax::expr::last_segment(&c.func),
            Some(
                "bool"
                    | "isfinite"
                    | "isnan"
                    | "isinf"
                    | "logical_and"
                    | "logical_or"
                    | "logical_not"
                    | "eq"
                    | "ne"
                    | "gt"
                    | "lt"
                    | "ge"
                    | "le"
            )
        ),
        _ => false,
    }
}

fn literal_index(e: &Expr) -> Option<i64> {
    match e {
        Expr::NumberLiteral(n) => n.value.as_int().and_then(ruff_python_ast::Int::as_i64),
        Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::USub => {
            literal_index(&u.operand).map(|v| -v)
        }
        _ => None,
    }
}

fn is_empty_list(e: &Expr) -> bool {
    match e {
        Expr::List(l) => l.elts.is_empty(),
        Expr::Call(c) => {
            c.arguments.is_empty() && matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "list")
        }
        _ => false,
    }
}

/// Whether `elt` reads a name the comprehension binds.
fn mentions_targets(elt: &Expr, generators: &[ruff_python_ast::Comprehension]) -> bool {
    let mut targets = Vec::new();
    for g in generators {
        crate::syntax::expr::walk(&g.target, &mut |x| {
            if let Expr::Name(n) = x {
                targets.push(n.id.as_str());
            }
        });
    }
    let mut hit = false;
    crate::syntax::expr::walk(elt, &mut |x| {
        if let Expr::Name(n) = x {
            hit |= targets.contains(&n.id.as_str());
        }
    });
    hit
}

fn binding_range(module: &Module, binding: &Binding<'_>) -> TextRange {
    module.line_range(module.line_of(binding.at)).unwrap_or_default()
}

/// Whether a test reads a tensor's dtype (`t.dtype != d`).
fn reads_dtype(test: &Expr) -> bool {
    let mut found = false;
    crate::syntax::expr::walk(test, &mut |x| {
        if matches!(x, Expr::Attribute(a) if a.attr.id.as_str() == "dtype") {
            found = true;
        }
    });
    found
}

/// `torch.cat([x, filler])` where a piece after the first is allocated to a size read from a
/// value agreed through a collective (`torch.zeros(longest - n)`, `x.new_empty(fill, dim)`
/// with `fill = max(gathered) - n`): the tensor padded up to the agreed size, as `F.pad` by
/// amounts that read a gathered maximum ([`Meta::padded`]).
fn fills_up(eval: &mut Eval<'_, '_>, c: &ExprCall, at: TextSize) -> bool {
    let Some(pieces) = concat_pieces(c) else { return false };
    pieces.iter().skip(1).any(|piece| {
        let mut piece = piece;
        // `torch.zeros(n).cuda()`: where the filler lives is not its size.
        while let Expr::Call(moved) = piece
            && let Expr::Attribute(a) = &*moved.func
            && PLACEMENT_METHODS.contains(&a.attr.id.as_str())
        {
            piece = &a.value;
        }
        let Expr::Call(made) = piece else { return false };
        let size = match made.arguments.find_argument_value("size", 0) {
            Some(Expr::Tuple(t)) => t.elts.first(),
            other => other,
        };
        size.is_some_and(|n| !eval.value(n, at).whole.agreed.is_empty())
    })
}

/// The pieces a `torch.cat`-shaped call lists (`cat([x, pad])`, `cat((x, pad), dim=0)`).
fn concat_pieces(c: &ExprCall) -> Option<&[Expr]> {
    match c.arguments.find_argument_value("tensors", 0) {
        Some(Expr::List(l)) => Some(&l.elts),
        Some(Expr::Tuple(t)) => Some(&t.elts),
        _ => None,
    }
}

/// Whether the binding of `name` pads a tensor up to a size agreed through a collective, or
/// keeps one that already has it: it sits in a clause of an `if` whose test reads the agreed
/// value, and either pads itself ([`fills_up`]) or keeps a tensor as it is (`else: xp = x`)
/// while another clause of that `if` pads `name` up.
fn pads_to_agreed_size<'m>(
    eval: &mut Eval<'_, 'm>,
    name: &str,
    binding: &Binding<'m>,
    value: &Expr,
) -> bool {
    // Asked of every binding a size is followed through: the shapes first, the rest only
    // for a `cat`-shaped call or a name.
    match value {
        Expr::Call(c) if concat_pieces(c).is_some() => {}
        Expr::Name(_) => {}
        _ => return false,
    }
    let module = eval.module;
    let Some(path) = module.path(module.line_of(binding.at)) else { return false };
    let levels: Vec<_> = path.scope_levels(module).to_vec();
    let Some((owner, s)) = levels.iter().rev().find_map(|level| match level.owner {
        Some(owner @ Stmt::If(s)) => Some((owner, s)),
        _ => None,
    }) else {
        return false;
    };
    let pads = |eval: &mut Eval<'_, 'm>, v: &Expr, at: TextSize| {
        let Expr::Call(c) = v else { return false };
        if concat_pieces(c).is_none() {
            return false;
        }
        let is_concat = matches!(eval.resolve(&c.func, at), Sym::Path(p)
            if knowledge().api(&p).is_some_and(|a| a.role == Role::Concat));
        is_concat && fills_up(eval, c, at)
    };
    let outer = std::mem::replace(&mut eval.scope, binding.scope);
    let padding = pads(eval, value, binding.at)
        || matches!(value, Expr::Name(_))
            && bindings::bindings(module, binding.scope, name).iter().any(|b| {
                owner.range().contains(b.at)
                    && b.at != binding.at
                    && matches!(b.source, Source::Value(v) if pads(eval, v, b.at))
            });
    let answer = padding && !eval.value(&s.test, s.start()).whole.agreed.is_empty();
    eval.scope = outer;
    answer
}

/// Whether a block of the `if` statement `stmt` other than `own` (the one holding `binding`)
/// also binds `name`.
fn other_clause_binds(
    module: &Module,
    stmt: &Stmt,
    own: Slot,
    binding: &Binding<'_>,
    name: &str,
) -> bool {
    let slot_at = |at: TextSize| {
        tree::blocks(stmt)
            .into_iter()
            .find(|b| {
                b.suite.first().is_some_and(|f| f.start() <= at)
                    && b.suite.last().is_some_and(|l| at < l.end())
            })
            .map(|b| b.slot)
    };
    bindings::bindings(module, binding.scope, name)
        .iter()
        .filter(|b| stmt.range().contains(b.at))
        .any(|b| slot_at(b.at).is_some_and(|slot| slot != own))
}

/// Whether every clause of the `if` statement `stmt`, an `else` included, holds one of the
/// statements at `grow_at`.
fn grows_in_every_clause(stmt: &Stmt, grow_at: &[TextSize]) -> bool {
    let Stmt::If(s) = stmt else { return false };
    if s.elif_else_clauses.last().is_none_or(|c| c.test.is_some()) {
        return false;
    }
    tree::blocks(stmt).iter().all(|b| {
        let (Some(first), Some(last)) = (b.suite.first(), b.suite.last()) else { return false };
        grow_at.iter().any(|&at| first.start() <= at && at < last.end())
    })
}
