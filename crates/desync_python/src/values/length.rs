//! Lengths: why the number of items of an iterable can differ across ranks. A loop counter,
//! an accumulator incremented once per iteration and the number of times a loop body issues
//! its collectives all depend on this, not on what the items hold: `range(steps)` counts alike
//! everywhere unless `steps` differs; a `DistributedSampler` gives every rank the same number
//! of indices by construction; a list built from a rank's own files does not.

use ruff_python_ast::{Expr, ExprCall, ExprSlice, Operator};
use ruff_text_size::{Ranged, TextSize};

use super::resolve::Sym;
use super::value::Eval;
use super::{Deps, MAX_HOPS, via};
use crate::names::bindings::{self, Source};
use crate::names::knowledge::{Role, knowledge};

/// Builtins and methods whose result has the length of their (first) argument.
const SAME_LENGTH: &[&str] = &["enumerate", "reversed", "sorted", "list", "tuple", "iter", "set"];

impl Eval<'_, '_> {
    pub(crate) fn length(&mut self, e: &Expr, at: TextSize) -> Deps {
        match e {
            Expr::List(l) => self.starred_lengths(&l.elts, at),
            Expr::Tuple(t) => self.starred_lengths(&t.elts, at),
            Expr::Set(s) => self.starred_lengths(&s.elts, at),
            Expr::Dict(_)
            | Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::NumberLiteral(_) => Deps::default(),
            Expr::ListComp(c) => self.comprehension_length(&c.generators, at),
            Expr::SetComp(c) => self.comprehension_length(&c.generators, at),
            Expr::Generator(c) => self.comprehension_length(&c.generators, at),
            Expr::DictComp(c) => self.comprehension_length(&c.generators, at),
            Expr::Name(n) => self.name_length(n.id.as_str(), e, at),
            // `self.loader`: as long as what the class's methods assign to it.
            Expr::Attribute(a) => {
                let class = match &*a.value {
                    Expr::Name(n) => self.self_class(n.id.as_str(), at),
                    _ => None,
                };
                class
                    .and_then(|c| self.class_attribute_length(c, a.attr.id.as_str()))
                    .unwrap_or_else(|| self.value(e, at).whole)
            }
            Expr::Call(c) => self.call_length(e, c, at),
            // `x @ w + 0.1 * noise`: elementwise arithmetic keeps (broadcasts) its operands'
            // lengths, whatever their values are.
            Expr::BinOp(b) => {
                let mut d = self.length(&b.left, at);
                d.merge(self.length(&b.right, at));
                d
            }
            Expr::UnaryOp(u) => self.length(&u.operand, at),
            // `torch.rand(n, 4) < 0.6`: an elementwise comparison is a mask as long as its
            // operands, whatever they hold (what the draw gives decides the mask's values).
            Expr::Compare(c) => {
                let mut d = self.length(&c.left, at);
                for operand in &c.comparators {
                    d.merge(self.length(operand, at));
                }
                d
            }
            // `[tp, dp] if rank < 4 else [dp, tp]`: two lists written out with as many items
            // are as long whichever the test picks; otherwise the pick counts too.
            Expr::If(i) => {
                if let (Some(a), Some(b)) = (written_out(&i.body), written_out(&i.orelse))
                    && a == b
                {
                    return Deps::default();
                }
                let mut d = self.length(&i.body, at);
                d.merge(self.length(&i.orelse, at));
                d.merge(self.value(&i.test, at).whole);
                d
            }
            // `items[:n]`: as long as the bound says, at most. `shards[rank]`: as long as the
            // item the index picks, whose size is read of it, not shown to differ by the pick
            // (`via::PICKED`), except a piece of a split: the last one can be shorter
            // (`torch.split(ids, ceil(n / world))[rank]`).
            Expr::Subscript(s) => {
                let mut d = self.length(&s.value, at);
                d.merge(match &*s.slice {
                    Expr::Slice(sl) if self.evenly_strided(&s.value, sl, at) => {
                        let mut bounds = Deps::default();
                        for bound in [&sl.upper, &sl.step].into_iter().flatten() {
                            bounds.merge(self.value(bound, at).whole);
                        }
                        bounds
                    }
                    Expr::Slice(_) => self.value(&s.slice, at).whole,
                    index if from_split(self, &s.value, at) => self.value(index, at).whole,
                    index => self.value(index, at).whole.through(via::PICKED).read_of(),
                });
                d
            }
            _ => self.value(e, at).whole,
        }
    }

    /// `ids[:per * world][rank::world]`, `indices[rank:total:world]` with `total = per *
    /// world`: a strided shard of a span whose length is a multiple of the stride has that
    /// multiple's number of items whatever it starts at (below the stride), so where each
    /// rank starts does not change how many items it gets. The span is the slice's own upper
    /// bound, or the bound of a prefix the value was cut to; the multiple is a product that
    /// has the stride, as written, for a factor.
    fn evenly_strided(&mut self, value: &Expr, slice: &ExprSlice, at: TextSize) -> bool {
        let (Some(_), Some(step)) = (&slice.lower, &slice.step) else { return false };
        let stride = self.text(&**step);
        let span = match (&slice.upper, value) {
            (Some(upper), _) => upper,
            (None, Expr::Subscript(inner)) => match &*inner.slice {
                Expr::Slice(ExprSlice { lower: None, upper: Some(upper), step: None, .. }) => upper,
                _ => return false,
            },
            _ => return false,
        };
        self.multiple_of(span, stride, at)
    }

    /// Whether `e` is written as a product with `factor` (its text) for a factor, directly or
    /// through the name it is assigned to (a statement of the module: its own text).
    fn multiple_of(&self, e: &Expr, factor: &str, at: TextSize) -> bool {
        let has_factor = |e: &Expr, is_factor: &dyn Fn(&Expr) -> bool| {
            matches!(e, Expr::BinOp(b) if b.op == Operator::Mult
                && (is_factor(&b.left) || is_factor(&b.right)))
        };
        match e {
            Expr::Name(n) => match bindings::lookup(self.module, self.scope, n.id.as_str(), at) {
                Some(bindings::Binding { source: Source::Value(v), .. }) => {
                    has_factor(v, &|x| self.module.text(x.range()) == factor)
                }
                _ => false,
            },
            e => has_factor(e, &|x| self.text(x) == factor),
        }
    }

    fn starred_lengths(&mut self, elements: &[Expr], at: TextSize) -> Deps {
        let mut out = Deps::default();
        for e in elements {
            if let Expr::Starred(s) = e {
                out.merge(self.length(&s.value, at));
            }
        }
        out
    }

    fn comprehension_length(
        &mut self,
        generators: &[ruff_python_ast::Comprehension],
        at: TextSize,
    ) -> Deps {
        let mut out = Deps::default();
        for g in generators {
            out.merge(self.length(&g.iter, at));
            for cond in &g.ifs {
                out.merge(self.value(cond, at).whole);
            }
        }
        out
    }

    fn name_length(&mut self, name: &str, e: &Expr, at: TextSize) -> Deps {
        let Some(binding) = bindings::lookup(self.module, self.scope, name, at) else {
            return self.value(e, at).whole;
        };
        match binding.source {
            Source::Parameter => Deps::length_param(name),
            // `x, y = make_shard(n)`: the length of what the project function returns there.
            Source::Element(Expr::Call(c), i) if !self.tracing.contains(&binding.at) => {
                let outer = std::mem::replace(&mut self.scope, binding.scope);
                let foreign = self.foreign.take();
                self.tracing.push(binding.at);
                let d = match self.resolve(&c.func, binding.at) {
                    Sym::Function(f) => match self.summary(&f) {
                        Some(s) => {
                            let picked = s
                                .element_lengths
                                .as_ref()
                                .and_then(|es| es.get(i))
                                .cloned()
                                .unwrap_or_else(|| s.length.clone());
                            self.substitute(picked, &s, &f, c, binding.at)
                        }
                        None => self.value(e, at).whole,
                    },
                    _ => self.call_length(&Expr::Call(c.clone()), c, binding.at),
                };
                self.tracing.pop();
                self.foreign = foreign;
                self.scope = outer;
                let hop = format!(
                    "`{name}` = element {i} of {} (line {})",
                    super::quote(self.module.text(c.range())),
                    self.line_of(binding.at)
                );
                d.hop(&hop)
            }
            Source::Value(v)
                if !self.tracing.contains(&binding.at) && self.tracing.len() < MAX_HOPS =>
            {
                let hop = format!(
                    "`{name}` = {} (line {})",
                    super::quote(self.module.text(v.range())),
                    self.line_of(binding.at)
                );
                let outer = std::mem::replace(&mut self.scope, binding.scope);
                let foreign = self.foreign.take();
                self.tracing.push(binding.at);
                let mut d = self.length(v, binding.at);
                self.tracing.pop();
                self.foreign = foreign;
                self.scope = outer;
                // `keys = []` then `keys.append(k)` under `if rank == 0:`: what is written into
                // it in place, and where, before this use.
                d.merge(self.mutations(name, &binding, Some(at)));
                d.hop(&hop)
            }
            _ => self.value(e, at).whole,
        }
    }

    fn call_length(&mut self, e: &Expr, c: &ExprCall, at: TextSize) -> Deps {
        let first = c.arguments.args.first();
        // `range(n)` yields n items: its length is the value of its bounds.
        if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "range") {
            return self.value(e, at).whole;
        }
        match self.resolve(&c.func, at) {
            Sym::Function(f) => {
                if let Some(s) = self.summary(&f) {
                    let length = s.length.clone();
                    return self.substitute(length, &s, &f, c, at);
                }
                self.value(e, at).whole
            }
            Sym::Path(p) => match knowledge().api(&p).map(|a| (a.role, a.uniform_length())) {
                Some((Role::Data, uniform)) => self.data_length(uniform, c, at),
                // `tqdm(loader, disable=not is_main)`: as many items as the loader.
                Some((Role::Progress, _)) => {
                    first.map_or_else(Deps::default, |arg| self.length(arg, at))
                }
                // What a clock, a host read or the rank says is data, not a size. A
                // configuration read (`yaml.safe_load(f)`) or a value the same on every rank
                // holds as many items as its content does: how it was read (a file opened
                // on each host) sizes nothing.
                Some((
                    Role::Environment
                    | Role::Time
                    | Role::Rank
                    | Role::Exception
                    | Role::Config
                    | Role::Uniform,
                    _,
                )) => self.value(e, at).whole,
                // `torch.randn(n, 8)` has n rows whatever it draws; a library function the
                // table does not name keeps the sizes of what it is given.
                _ => self.arguments_length(c, at),
            },
            // A project class that says itself how many items it has (`__iter__`, `__len__`):
            // what it is given need not decide that (`StreamingShard(rank, steps)` yields
            // `steps` batches on every rank, seeded by the rank), and its own code is not
            // followed here.
            Sym::Class(class) if defines_its_length(self.module, &class) => Deps::opaque(format!(
                "the number of items of {} (its class counts them itself)",
                self.quoted(e)
            )),
            Sym::Class(_) => self.arguments_length(c, at),
            _ => {
                let name = crate::syntax::expr::last_segment(&c.func).unwrap_or_default();
                match (name, first) {
                    ("range", _) => self.value(e, at).whole,
                    (n, Some(arg))
                        if SAME_LENGTH.contains(&n) && matches!(*c.func, Expr::Name(_)) =>
                    {
                        self.length(arg, at)
                    }
                    ("zip", _) => {
                        let mut out = Deps::default();
                        for a in &c.arguments.args {
                            out.merge(self.length(a, at));
                        }
                        out
                    }
                    // A method of a value (`x.view(-1)`, `model(x)`): the receiver's length,
                    // reshaped by the arguments.
                    _ => {
                        let mut d = match &*c.func {
                            Expr::Attribute(a) => self.length(&a.value, at),
                            func => self.value(func, at).whole,
                        };
                        for arg in c
                            .arguments
                            .args
                            .iter()
                            .chain(c.arguments.keywords.iter().map(|k| &k.value))
                        {
                            d.merge(self.length(arg, at));
                        }
                        d
                    }
                }
            }
        }
    }

    /// The sizes a call is given: its positional arguments (sizes of a tensor constructor, the
    /// tensors of a dataset), each by its length (a scalar's "length" is its value). Keywords
    /// (`generator=`, `dtype=`, `device=`) do not size anything.
    fn arguments_length(&mut self, c: &ExprCall, at: TextSize) -> Deps {
        let mut d = Deps::default();
        for arg in &c.arguments.args {
            d.merge(self.length(arg, at));
        }
        d
    }

    /// A data loader has as many batches as its sampler gives indices (or its dataset holds
    /// items); a sampler the table says is uniform makes it uniform.
    fn data_length(&mut self, uniform: bool, c: &ExprCall, at: TextSize) -> Deps {
        if uniform {
            return Deps::default();
        }
        for kw in &c.arguments.keywords {
            let Some(name) = kw.arg.as_ref().map(|a| a.id.as_str()) else { continue };
            if name == "sampler" || name == "batch_sampler" {
                return self.length(&kw.value, at);
            }
        }
        match c.arguments.args.first() {
            Some(dataset) => {
                let mut d = self.length(dataset, at);
                for kw in &c.arguments.keywords {
                    if kw.arg.as_ref().is_some_and(|a| a.id.as_str() == "batch_size") {
                        d.merge(self.value(&kw.value, at).whole);
                    }
                }
                d
            }
            None => Deps::default(),
        }
    }
}

/// The number of items of a list, tuple or set written out without `*`.
fn written_out(e: &Expr) -> Option<usize> {
    let elements = match e {
        Expr::List(l) => &l.elts,
        Expr::Tuple(t) => &t.elts,
        Expr::Set(s) => &s.elts,
        _ => return None,
    };
    (!elements.iter().any(Expr::is_starred_expr)).then_some(elements.len())
}

/// Whether the project class `class` defines `__iter__` or `__len__` in its own body.
fn defines_its_length(
    module: &crate::syntax::module::Module,
    class: &super::resolve::ClassRef,
) -> bool {
    let Some(start) = class.local else { return false };
    let module = class.module.as_deref().unwrap_or(module);
    super::resolve::class_at(module, start).is_some_and(|def| {
        def.body.iter().any(|s| {
            matches!(s, ruff_python_ast::Stmt::FunctionDef(f)
                if matches!(f.name.id.as_str(), "__iter__" | "__len__"))
        })
    })
}

/// Functions and methods that cut a tensor into pieces whose last one can be shorter.
const SPLITS: &[&str] = &["split", "chunk", "tensor_split", "array_split", "split_with_sizes"];

/// Whether `e` is (or names a value assigned from) a split of a tensor into pieces.
pub(crate) fn from_split(eval: &mut Eval<'_, '_>, e: &Expr, at: TextSize) -> bool {
    let is_split = |e: &Expr| matches!(e, Expr::Call(c) if crate::syntax::expr::last_segment(&c.func).is_some_and(|n| SPLITS.contains(&n)));
    match e {
        Expr::Name(n) => match bindings::lookup(eval.module, eval.scope, n.id.as_str(), at) {
            Some(bindings::Binding { source: Source::Value(v), .. }) => is_split(v),
            _ => false,
        },
        e => is_split(e),
    }
}
