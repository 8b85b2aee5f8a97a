//! How calls are resolved to collectives: import aliases (`import torch.distributed as d`),
//! DDP/FSDP-wrapped models whose forward and backward passes communicate, and the file's own
//! functions that reach a collective, by name (`sync(x)`, `self.sync(x)`, `logger.log_metrics(x)`
//! when the file defines `log_metrics` as a method).

use std::collections::HashMap;

use desync_python::patterns::COLLECTIVES;
use desync_python::{Call, Module, Outline, StepKind};

use super::Via;

/// Callees that wrap a model so its forward and backward passes issue collectives.
const WRAPPERS: &[&str] = &["DistributedDataParallel", "FullyShardedDataParallel", "DDP", "FSDP"];
/// Wrappers that modify the module in place (`fully_shard(model)`).
const IN_PLACE_WRAPPERS: &[&str] = &["fully_shard", "replicate"];

/// Import aliases of a file: bound name → dotted module path.
pub(super) struct Imports(HashMap<String, String>);

impl Imports {
    pub(super) fn new(outline: &Outline) -> Imports {
        let mut map = HashMap::new();
        for import in &outline.imports {
            let full = match &import.name {
                Some(name) => format!("{}.{name}", import.module),
                None => import.module.clone(),
            };
            map.insert(import.alias.clone(), full);
        }
        Imports(map)
    }

    /// The callee with its root alias expanded (`dist.all_reduce` → `torch.distributed.all_reduce`).
    fn qualify(&self, callee: &str) -> Option<String> {
        let (root, rest) = callee.split_once('.').map_or((callee, ""), |(r, t)| (r, t));
        let module = self.0.get(root)?;
        Some(if rest.is_empty() { module.clone() } else { format!("{module}.{rest}") })
    }

    fn binds(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

pub(super) fn direct_kind(call: &Call, imports: &Imports) -> Option<(Via, String)> {
    let op = call.name();
    // The imported name decides (`from torch.distributed import all_reduce as reduce_all`).
    let (is_torch, op) = match imports.qualify(&call.callee) {
        Some(q) => {
            let last = q.rsplit('.').next().unwrap_or_default().to_owned();
            (q.starts_with("torch.distributed."), last)
        }
        // `dist` that this file never imports: a parameter or a star import; by convention
        // it is torch.distributed.
        None => (call.callee.starts_with("dist."), op.to_owned()),
    };
    (is_torch && COLLECTIVES.contains(&op.as_str())).then_some((Via::Direct, op))
}

/// A wrapped model's forward call, or `loss.backward()` where `loss` comes from one (or from
/// something this file cannot see into, such as a parameter): DDP's gradient hooks all-reduce
/// during the backward pass, FSDP's reduce-scatter.
pub(super) fn implicit_kind(
    module: &Module,
    call: &Call,
    wrapped: &[String],
) -> Option<(Via, String)> {
    if wrapped.contains(&call.callee) {
        return Some((Via::Implicit, "forward".to_owned()));
    }
    let receiver = call.callee.strip_suffix(".backward").filter(|_| !wrapped.is_empty())?;
    let steps = module.trace_value(call.line, receiver);
    let opaque = steps.iter().all(|s| matches!(s.kind, StepKind::Expression | StepKind::Parameter));
    let from_wrapped = steps
        .iter()
        .filter_map(|s| s.text.as_deref())
        .any(|text| wrapped.iter().any(|w| calls_name(text, w)));
    (opaque || from_wrapped).then(|| (Via::Implicit, "backward".to_owned()))
}

/// True when `text` calls `name` (`model(` in `loss_fn(model(x), y)`, not in `ddp_model(`).
fn calls_name(text: &str, name: &str) -> bool {
    let pattern = format!("{name}(");
    text.match_indices(&pattern).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
    })
}

/// Names bound to DDP/FSDP-wrapped models (`model = DDP(model)`, `fully_shard(model)`).
pub(super) fn wrapped_models(outline: &Outline, imports: &Imports) -> Vec<String> {
    let mut out = Vec::new();
    for call in &outline.calls {
        let qualified = imports.qualify(&call.callee).unwrap_or_else(|| call.callee.clone());
        let last = qualified.rsplit('.').next().unwrap_or_default();
        if WRAPPERS.contains(&last) {
            out.extend(call.assigned_to.iter().cloned());
        } else if IN_PLACE_WRAPPERS.contains(&last) && qualified.starts_with("torch.distributed") {
            out.extend(call.arguments.first().cloned());
            out.extend(call.assigned_to.iter().cloned());
        }
    }
    out
}

/// Method names too common to resolve by name on an arbitrary receiver: `optimizer.step()`
/// is not the file's own `def step(self)`.
const COMMON_METHODS: &[&str] = &[
    "step",
    "zero_grad",
    "backward",
    "forward",
    "update",
    "append",
    "extend",
    "insert",
    "get",
    "set",
    "item",
    "to",
    "cuda",
    "cpu",
    "save",
    "load",
    "train",
    "eval",
    "state_dict",
    "load_state_dict",
    "parameters",
    "named_parameters",
    "modules",
    "children",
    "run",
    "close",
    "write",
    "read",
    "flush",
    "start",
    "stop",
    "join",
    "wait",
    "put",
    "pop",
    "add",
    "sum",
    "mean",
    "reset",
    "clear",
    "copy",
    "keys",
    "values",
    "items",
    "format",
    "apply",
    "register",
    "send",
    "recv",
    "log",
    "info",
    "debug",
    "warning",
    "error",
    "print",
    "__call__",
    "__init__",
];

/// The local function a call may reach: `name(...)` when `name` is not imported,
/// `self.name(...)`/`cls.name(...)`, or `obj.name(...)` when the file defines a method `name`
/// whose name is not a common library method.
pub(super) fn local_callee<'c>(
    call: &'c Call,
    imports: &Imports,
    methods: &[&str],
) -> Option<&'c str> {
    match call.callee.split_once('.') {
        None if !imports.binds(&call.callee) => Some(&call.callee),
        Some(("self" | "cls", rest)) if !rest.contains('.') => Some(rest),
        Some((root, _)) if !imports.binds(root) => {
            let name = call.name();
            (methods.contains(&name) && !COMMON_METHODS.contains(&name)).then_some(name)
        }
        _ => None,
    }
}

/// Names of the file's methods (functions whose first parameter is `self` or `cls`).
pub(super) fn method_names(outline: &Outline) -> Vec<&str> {
    outline
        .functions
        .iter()
        .filter(|f| f.parameters.first().is_some_and(|p| p == "self" || p == "cls"))
        .map(|f| f.name.as_str())
        .collect()
}

/// Functions of the file that (transitively) reach one of the calls marked in `direct`, by
/// name, each with what it reaches.
pub(super) fn helpers(
    outline: &Outline,
    imports: &Imports,
    methods: &[&str],
    direct: &[Option<(Via, String)>],
) -> HashMap<String, String> {
    let mut reach: HashMap<String, String> = HashMap::new();
    for (call, kind) in outline.calls.iter().zip(direct) {
        if kind.is_some()
            && let Some(f) =
                call.function.and_then(|d| outline.functions.iter().find(|f| f.def_line == d))
        {
            let what = format!("`{}` at line {}", call.callee, call.line);
            reach.entry(f.name.clone()).or_insert(what);
        }
    }
    // Propagate through local calls until nothing changes (each round adds a function).
    loop {
        let mut added = false;
        for call in &outline.calls {
            let (Some(def), Some(callee)) = (call.function, local_callee(call, imports, methods))
            else {
                continue;
            };
            let Some(f) = outline.functions.iter().find(|f| f.def_line == def) else { continue };
            if reach.contains_key(&f.name) {
                continue;
            }
            if let Some(inner) = reach.get(callee) {
                let what = format!("`{callee}`, which calls {inner}");
                reach.insert(f.name.clone(), shorten(what));
                added = true;
            }
        }
        if !added {
            break;
        }
    }
    reach
}

/// Helper chains can get long; keep the first hops.
fn shorten(mut text: String) -> String {
    const MAX: usize = 160;
    if text.len() > MAX {
        let cut = (0..=MAX).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}
