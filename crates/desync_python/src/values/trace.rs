//! [`Module::trace_value`](crate::Module::trace_value): where a value comes from, as a list of
//! steps — the expression itself, then each binding its names are read from, breadth first, a
//! few levels deep — with the facts about each step's expression that decide whether a
//! collective's tensor can have another shape or dtype on another rank: lengths read from data,
//! slices with variable bounds, data-dependent shapes, concatenations of lists, data loaders,
//! padding, dtype choices and collectives that already agreed on the value.

use std::collections::VecDeque;

use rustc_hash::FxHashSet as HashSet;

use ruff_python_ast::{Expr, ExprCall, Mod, Number, UnaryOp};
use ruff_python_parser::{Mode, ParseOptions, parse_unchecked};
use ruff_text_size::{Ranged, TextSize};

use crate::names::bindings::{self, Scope, Source};
use crate::syntax::expr::{self, children, dotted, last_segment, names_dtype};
use crate::syntax::module::Module;
use crate::syntax::patterns::{COLLECTIVES, has_word};
use crate::syntax::tree::MAX_DEPTH;

/// How many bindings deep names are followed.
const MAX_TRACE_DEPTH: u32 = 4;
/// Steps kept at most (a wide expression fans out quickly).
const MAX_STEPS: usize = 48;

/// Callees whose arguments are a tensor's contents, not its shape (`torch.tensor([len(x)])`
/// always has one element).
const DATA_CONSTRUCTORS: &[&str] = &[
    "tensor",
    "as_tensor",
    "Tensor",
    "FloatTensor",
    "LongTensor",
    "IntTensor",
    "BoolTensor",
    "DoubleTensor",
    "HalfTensor",
    "from_numpy",
    "print",
    "format",
    "str",
    "repr",
];
/// Callees whose result's shape depends on the values in the tensor.
const DATA_DEPENDENT_SHAPES: &[&str] =
    &["nonzero", "masked_select", "unique", "unique_consecutive", "argwhere", "boolean_mask"];
const CONCATENATIONS: &[&str] =
    &["cat", "stack", "concatenate", "concat", "vstack", "hstack", "row_stack", "column_stack"];

/// One step of a value's provenance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ValueStep {
    /// The name followed; `None` for the traced expression itself.
    pub name: Option<String>,
    /// Line of the expression, or of the statement that binds the name.
    pub line: u32,
    pub kind: StepKind,
    /// Source text of the expression, the bound value, or the iterable of a loop item.
    pub text: Option<String>,
    pub features: Vec<ValueFeature>,
    /// `def` line of the function the step lives in (`None`: module level); for a
    /// [`StepKind::Parameter`], the function whose callers pass the value.
    pub function: Option<u32>,
    /// 0 for the expression, 1 for the names it reads, and so on.
    pub depth: u32,
}

/// How a step's name got its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// The traced expression itself.
    Expression,
    /// `x = value` (or a walrus, or one element of a tuple unpacking).
    Value,
    /// `x op= value`.
    Augmented,
    /// `for x in iterable`.
    LoopItem,
    /// The index of `enumerate`/`range`.
    LoopCounter,
    /// `with ctx as x`.
    WithItem,
    /// `except E as x`.
    Caught,
    /// A parameter of the function: its callers decide the value.
    Parameter,
}

/// A fact about a step's expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ValueFeature {
    /// `len(x)`, `x.size(0)`, `x.shape[0]`, `x.numel()` (outside `torch.tensor([...])`).
    Length { of: String },
    /// A subscript with a variable bound, e.g. `x[:n]` or `x[rank::world_size]`.
    Slice { bounds: String },
    /// `nonzero()`, `masked_select`, `unique`: the shape depends on the values.
    DataDependentShape { call: String },
    /// `torch.cat(xs)` of a list variable (not a list display).
    Concat { list: String },
    /// A `DataLoader(...)` and whether it drops the last, ragged batch.
    Loader { drop_last: bool },
    /// A padding call (`F.pad`, `pad_sequence`, `pad_across_processes`).
    Padding { call: String },
    /// A dtype choice: `.to(d)`, `.type(d)`, `dtype=d`.
    Dtype { expr: String },
    /// A collective call: the value was exchanged between ranks.
    Collective { callee: String },
}

pub(crate) fn trace(module: &Module, line: u32, expr_source: &str) -> Vec<ValueStep> {
    if expr_source.trim().is_empty() {
        return Vec::new();
    }
    let parsed = parse_unchecked(expr_source, ParseOptions::from(Mode::Expression));
    let Mod::Expression(root) = parsed.into_syntax() else { return Vec::new() };
    let end = TextSize::try_from(module.source().len()).unwrap_or_default();
    let at = module.line_range(line).map_or(end, ruff_text_size::TextRange::start);
    let scope = Scope::at(module, line);
    let mut steps = vec![ValueStep {
        name: None,
        line,
        kind: StepKind::Expression,
        text: Some(expr_source.trim().to_owned()),
        features: features(&root.body, expr_source),
        function: def_line(module, scope),
        depth: 0,
    }];
    let mut queue: VecDeque<(String, TextSize, Scope<'_>, u32)> =
        names(&root.body).into_iter().map(|n| (n, at, scope, 1)).collect();
    let mut seen = HashSet::default();
    while let Some((name, at, scope, depth)) = queue.pop_front() {
        if steps.len() >= MAX_STEPS {
            break;
        }
        let Some(binding) = bindings::lookup(module, scope, &name, at) else { continue };
        if !seen.insert((name.clone(), binding.at)) {
            continue;
        }
        let (kind, value) = match binding.source {
            Source::Value(v) | Source::Element(v, _) => (StepKind::Value, Some(v)),
            Source::Augmented(v) => (StepKind::Augmented, Some(v)),
            Source::LoopItem(v) | Source::LoopElement(v, _) => (StepKind::LoopItem, Some(v)),
            Source::WithItem(v) => (StepKind::WithItem, Some(v)),
            Source::LoopCounter(_) => (StepKind::LoopCounter, None),
            Source::Caught => (StepKind::Caught, None),
            Source::Parameter => (StepKind::Parameter, None),
            // Imports, functions and classes: code, the same on every rank.
            Source::Import { .. } | Source::Function(_) | Source::Class(_) => continue,
        };
        steps.push(ValueStep {
            name: Some(name.clone()),
            line: module.line_of(binding.at),
            kind,
            text: value.map(|v| module.text(v.range()).to_owned()),
            features: value.map(|v| features(v, module.source())).unwrap_or_default(),
            function: def_line(module, binding.scope),
            depth,
        });
        let Some(value) = value.filter(|_| depth < MAX_TRACE_DEPTH) else { continue };
        for next in names(value) {
            queue.push_back((next, binding.at, binding.scope, depth + 1));
        }
        if kind == StepKind::Augmented {
            // `x += y` also carries the previous `x`.
            queue.push_back((name, binding.at, binding.scope, depth + 1));
        }
    }
    steps
}

fn def_line(module: &Module, scope: Scope<'_>) -> Option<u32> {
    scope.function.map(|f| module.line_of(f.name.start()))
}

/// The distinct names an expression reads, in first-seen order.
fn names(e: &Expr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    expr::walk(e, &mut |x| {
        if let Expr::Name(n) = x
            && !out.iter().any(|o| o == n.id.as_str())
        {
            out.push(n.id.to_string());
        }
    });
    out
}

fn features(e: &Expr, src: &str) -> Vec<ValueFeature> {
    let mut out = Vec::new();
    visit(e, src, &mut out, 0);
    out
}

fn text<'s>(src: &'s str, node: &impl Ranged) -> &'s str {
    let r = node.range();
    src.get(r.start().to_usize()..r.end().to_usize()).unwrap_or("")
}

fn visit(e: &Expr, src: &str, out: &mut Vec<ValueFeature>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match e {
        // Contents of `torch.tensor([...])` and the like are not looked into.
        Expr::Call(c) if call_features(c, src, out) => return,
        Expr::Attribute(a) if a.attr.id.as_str() == "shape" => {
            out.push(ValueFeature::Length { of: text(src, &*a.value).to_owned() });
        }
        Expr::Subscript(s) => {
            if let Some(bounds) = variable_slice(&s.slice, src) {
                out.push(ValueFeature::Slice { bounds });
            }
            // `x.shape[1]`: a feature dimension, fixed by the model, not by the batch.
            if let Expr::Attribute(a) = &*s.value
                && a.attr.id.as_str() == "shape"
                && is_nonzero_index(&s.slice)
            {
                visit(&a.value, src, out, depth + 1);
                return;
            }
        }
        Expr::FString(_) | Expr::Lambda(_) => return,
        _ => {}
    }
    for child in children(e) {
        visit(child, src, out, depth + 1);
    }
}

/// Facts about one call; `true` when its arguments are contents, not to be looked into.
fn call_features(c: &ExprCall, src: &str, out: &mut Vec<ValueFeature>) -> bool {
    let last = last_segment(&c.func).unwrap_or_default();
    let callee = || dotted(&c.func).unwrap_or_else(|| text(src, &*c.func).to_owned());
    let receiver = match &*c.func {
        Expr::Attribute(a) => Some(text(src, &*a.value).to_owned()),
        _ => None,
    };
    for kw in &c.arguments.keywords {
        if kw.arg.as_ref().is_some_and(|a| a.as_str() == "dtype") {
            out.push(ValueFeature::Dtype { expr: text(src, &kw.value).to_owned() });
        }
    }
    if DATA_CONSTRUCTORS.contains(&last) {
        return true;
    }
    let first = c.arguments.args.first();
    match last {
        "len" => {
            if let Some(a) = first {
                out.push(ValueFeature::Length { of: text(src, a).to_owned() });
            }
        }
        "size" | "numel" if !first.is_some_and(is_nonzero_index) => {
            if let Some(of) = receiver {
                out.push(ValueFeature::Length { of });
            }
        }
        "to" | "type" if receiver.is_some() => {
            for a in c.arguments.args.iter().filter(|a| names_dtype(a)) {
                out.push(ValueFeature::Dtype { expr: text(src, a).to_owned() });
            }
        }
        "where" if c.arguments.args.len() == 1 => {
            out.push(ValueFeature::DataDependentShape { call: callee() });
        }
        "DataLoader" => {
            let drop_last = c.arguments.keywords.iter().any(|k| {
                k.arg.as_ref().is_some_and(|a| a.as_str() == "drop_last")
                    && matches!(k.value, Expr::BooleanLiteral(ref b) if b.value)
            });
            out.push(ValueFeature::Loader { drop_last });
        }
        _ => {}
    }
    if DATA_DEPENDENT_SHAPES.contains(&last) {
        out.push(ValueFeature::DataDependentShape { call: callee() });
    }
    if CONCATENATIONS.contains(&last)
        && let Some(list) = first.filter(|a| !matches!(a, Expr::List(_) | Expr::Tuple(_)))
    {
        out.push(ValueFeature::Concat { list: text(src, list).to_owned() });
    }
    if last.starts_with("pad") || has_word(last, &["pad", "padded", "padding"]) {
        out.push(ValueFeature::Padding { call: callee() });
    }
    if COLLECTIVES.contains(&last) {
        out.push(ValueFeature::Collective { callee: callee() });
    }
    false
}

/// The text of a slice with a bound that is not a literal number (`:n`, `rank::world_size`).
fn variable_slice(slice: &Expr, src: &str) -> Option<String> {
    let parts: Vec<&Expr> = match slice {
        Expr::Tuple(t) => t.elts.iter().collect(),
        e => vec![e],
    };
    parts.into_iter().find_map(|p| {
        let Expr::Slice(s) = p else { return None };
        let bounds = [&s.lower, &s.upper, &s.step];
        bounds
            .iter()
            .any(|b| b.as_deref().is_some_and(|b| !is_literal_number(b)))
            .then(|| text(src, p).to_owned())
    })
}

/// A literal index other than 0 (`1`, `-1`): a dimension past the batch dimension.
fn is_nonzero_index(e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(n) => matches!(&n.value, Number::Int(i) if i.as_u64() != Some(0)),
        Expr::UnaryOp(u) => u.op == UnaryOp::USub && is_literal_number(&u.operand),
        _ => false,
    }
}

fn is_literal_number(e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(n) => matches!(n.value, Number::Int(_) | Number::Float(_)),
        Expr::UnaryOp(u) => u.op == UnaryOp::USub && is_literal_number(&u.operand),
        Expr::NoneLiteral(_) => true,
        _ => false,
    }
}

/// The value tracer the linter uses.
impl Module {
    /// Where the value of `expr_source`, written at `line`, comes from: the expression, then
    /// the bindings its names are read from (breadth first, a few levels deep, within the
    /// function and module globals), each with the facts that decide a tensor's shape or
    /// dtype (see [`ValueFeature`](crate::ValueFeature)). Parameters end a path: the callers decide them.
    pub fn trace_value(&self, line: u32, expr_source: &str) -> Vec<ValueStep> {
        crate::values::trace::trace(self, line, expr_source)
    }
}
