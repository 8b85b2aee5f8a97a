//! What one file knows about its collectives: which calls issue one, directly
//! (`dist.all_reduce` under any import alias), implicitly (`loss.backward()` and forward calls
//! of a model wrapped in DDP/FSDP in this file) or through local helper functions that
//! (transitively) issue one (resolution in [`resolve`]). Helpers are resolved by name within
//! the file, which is how training scripts are written.

mod resolve;

use desync_python::{
    Call, ClassifyOptions, Dependence, DependenceKind, Function, Module, Outline,
    classify_expression_with,
};
use resolve::{
    Imports, direct_kind, helpers, implicit_kind, local_callee, method_names, wrapped_models,
};

/// Point-to-point calls: rank-asymmetric by design (`if rank == 0: send(...)`).
pub(crate) const POINT_TO_POINT: &[&str] = &[
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
    "send_object_list",
    "recv_object_list",
];

/// How a call issues a collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Via {
    /// `torch.distributed.<op>` itself.
    Direct,
    /// Gradient or parameter hooks of a DDP/FSDP-wrapped model.
    Implicit,
    /// A function of this file that reaches `reaches` (e.g. "`dist.all_reduce` at line 45");
    /// `p2p_only` when everything it reaches is point-to-point.
    Helper { reaches: String, p2p_only: bool },
}

/// A call that issues (or may issue) a collective.
#[derive(Debug, Clone)]
pub(crate) struct Site<'o> {
    pub call: &'o Call,
    pub via: Via,
    /// The collective's name (`all_reduce`), `backward`/`forward`, or the helper's name.
    pub op: String,
}

impl Site<'_> {
    pub fn line(&self) -> u32 {
        self.call.line
    }

    pub fn is_point_to_point(&self) -> bool {
        match &self.via {
            Via::Direct => POINT_TO_POINT.contains(&self.op.as_str()),
            Via::Helper { p2p_only, .. } => *p2p_only,
            Via::Implicit => false,
        }
    }

    /// "`dist.all_reduce(window)` at line 79", plus what a helper reaches.
    pub fn describe(&self) -> String {
        let text = call_text(self.call);
        match &self.via {
            Via::Direct => format!("`{text}` at line {}", self.call.line),
            Via::Implicit => {
                format!("`{text}` at line {} (DDP/FSDP collectives)", self.call.line)
            }
            Via::Helper { reaches, .. } => {
                format!("`{text}` at line {} (calls {reaches})", self.call.line)
            }
        }
    }

    /// The process group argument's text, if any (to tell `f(tp)` from `f(dp)`).
    pub fn group(&self) -> Option<&str> {
        let keyword = ["group", "process_group", "pg"].iter().find_map(|k| self.call.keyword(k));
        keyword.or_else(|| {
            self.call.arguments.iter().map(String::as_str).find(|a| {
                let root = root_ident(a);
                root.split('_').any(|w| matches!(w, "group" | "pg" | "groups"))
            })
        })
    }
}

/// The analysis of one file.
pub(crate) struct Context<'a> {
    pub module: &'a Module,
    pub outline: &'a Outline,
    /// Collective-issuing calls, in source order.
    pub sites: Vec<Site<'a>>,
}

impl<'a> Context<'a> {
    pub fn new(module: &'a Module, outline: &'a Outline) -> Context<'a> {
        let imports = Imports::new(outline);
        let wrapped = wrapped_models(outline, &imports);
        let mut direct: Vec<Option<(Via, String)>> =
            outline.calls.iter().map(|c| direct_kind(c, &imports)).collect();
        for (call, slot) in outline.calls.iter().zip(direct.iter_mut()) {
            if slot.is_none() {
                *slot = implicit_kind(module, call, &wrapped);
            }
        }
        let methods = method_names(outline);
        let reach = helpers(outline, &imports, &methods, &direct);
        // The same over non-p2p calls only: a helper that only sends and receives is p2p too.
        let not_p2p: Vec<Option<(Via, String)>> = direct
            .iter()
            .map(|k| {
                k.clone().filter(|(via, op)| {
                    !(*via == Via::Direct && POINT_TO_POINT.contains(&op.as_str()))
                })
            })
            .collect();
        let collective_helpers = helpers(outline, &imports, &methods, &not_p2p);
        for (call, slot) in outline.calls.iter().zip(direct.iter_mut()) {
            if slot.is_none()
                && let Some(name) = local_callee(call, &imports, &methods)
                && let Some(reaches) = reach.get(name)
            {
                let p2p_only = !collective_helpers.contains_key(name);
                let via = Via::Helper { reaches: reaches.clone(), p2p_only };
                *slot = Some((via, name.to_owned()));
            }
        }
        let sites = outline
            .calls
            .iter()
            .zip(direct)
            .filter_map(|(call, kind)| kind.map(|(via, op)| Site { call, via, op }))
            .collect();
        Context { module, outline, sites }
    }

    /// Sites inside function `function` (`None`: module level) on lines `first..=last`.
    pub fn sites_in(
        &self,
        function: Option<u32>,
        first: u32,
        last: u32,
    ) -> impl Iterator<Item = &Site<'a>> {
        self.sites
            .iter()
            .filter(move |s| s.call.function == function && (first..=last).contains(&s.line()))
    }

    /// The function whose `def` is on `def_line`.
    pub fn function(&self, def_line: u32) -> Option<&'a Function> {
        self.outline.functions.iter().find(|f| f.def_line == def_line)
    }

    /// The innermost function around `line`, as its `def` line.
    pub fn function_of(&self, line: u32) -> Option<u32> {
        self.module.function_at(line).map(|f| f.def_line)
    }

    /// Why `expr` at `line` can differ across ranks, assuming every rank reads the same
    /// configuration; `Unknown` entries dropped.
    pub fn dependence(&self, line: u32, expr: &str) -> Vec<Dependence> {
        let options = ClassifyOptions { uniform_config: true };
        classify_expression_with(self.module, line, expr, options)
            .into_iter()
            .filter(|d| d.kind != DependenceKind::Unknown)
            .collect()
    }

    /// Calls of this file that call the function named `name` (bare or via `self`/`cls`).
    pub fn callers_of<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a Call> + 's {
        let imports = Imports::new(self.outline);
        let methods = method_names(self.outline);
        self.outline.calls.iter().filter(move |c| local_callee(c, &imports, &methods) == Some(name))
    }
}

/// `callee(args...)`, shortened for messages.
pub(crate) fn call_text(call: &Call) -> String {
    let args = call
        .arguments
        .iter()
        .cloned()
        .chain(call.keywords.iter().map(|(k, v)| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(", ");
    let flat = args.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = if flat.chars().count() > 40 { "...".to_owned() } else { flat };
    format!("{}({shown})", call.callee)
}

/// The leading identifier of an expression's text (`flag` for `flag[0].item()`).
pub(crate) fn root_ident(text: &str) -> &str {
    let text = text.trim_start_matches(['*', ' ']);
    let end = text.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len());
    &text[..end]
}

/// True when a dependence list says the value can differ across ranks for a reason that is
/// visible (anything but `Unknown`), and that reason is the rank id.
pub(crate) fn has_rank_id(deps: &[Dependence]) -> bool {
    deps.iter().any(|d| d.kind == DependenceKind::RankId)
}
