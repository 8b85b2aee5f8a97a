//! DSY005 and DSY006: collectives whose tensors can disagree in metadata across ranks.
//!
//! - DSY005: a gather-type collective (`all_gather`, `gather`, `all_gather_into_tensor`,
//!   `all_to_all`) of a tensor whose shape comes from rank-local data: a length read from
//!   data (`torch.zeros(len(batch))`), a slice with a rank- or data-dependent bound
//!   (`val_x[rank::world_size]`), a data-dependent shape (`nonzero()`), or a concatenation of
//!   a list built up locally. Quiet when the value is padded or was agreed on through a
//!   collective first (the sizes `all_gather` of the usual fix).
//! - DSY006: a collective whose tensor is cast to a dtype chosen per rank (`.to(comm_dtype)`
//!   with `comm_dtype` from an environment variable), followed into the callers of this file
//!   when the dtype is a parameter.

use desync_python::{Dependence, DependenceKind, StepKind, ValueFeature, ValueStep};

use super::{Raw, explain, short};
use crate::consensus::agreed;
use crate::context::{Context, Site, Via, call_text, root_ident};
use crate::rule::Rule;

/// Gather-type collectives and where their input tensor is: (name, positional index, keyword).
const GATHERS: &[(&str, usize, &str)] = &[
    ("all_gather", 1, "tensor"),
    ("gather", 0, "tensor"),
    ("all_gather_into_tensor", 1, "input_tensor"),
    ("_all_gather_base", 1, "input_tensor"),
    ("all_to_all", 1, "input_tensor_list"),
];

/// Keyword arguments that are not tensors.
const NON_TENSOR_KEYWORDS: &[&str] =
    &["group", "process_group", "pg", "op", "src", "dst", "async_op", "group_src", "group_dst"];

/// Bindings followed looking for the collective that agreed on a size.
const SIZE_AGREEMENT_DEPTH: u32 = 3;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for site in ctx.sites.iter().filter(|s| s.via == Via::Direct) {
        if let Some(raw) = ragged_gather(ctx, site) {
            out.push(raw);
        } else if let Some(raw) = per_rank_dtype(ctx, site) {
            out.push(raw);
        }
    }
    out
}

fn ragged_gather(ctx: &Context<'_>, site: &Site<'_>) -> Option<Raw> {
    let &(_, index, keyword) = GATHERS.iter().find(|(name, ..)| *name == site.op)?;
    let call = site.call;
    let input = call.keyword(keyword).or(call.arguments.get(index).map(String::as_str))?;
    let steps = ctx.module.trace_value(call.line, input);
    let padded =
        steps.iter().any(|s| s.features.iter().any(|f| matches!(f, ValueFeature::Padding { .. })));
    if padded {
        return None;
    }
    let (step, what, deps) = steps.iter().find_map(|s| local_shape(ctx, s, &steps))?;
    if agreed(ctx, call.line, input, call.line, SIZE_AGREEMENT_DEPTH) {
        return None;
    }
    let origin = match &step.name {
        Some(name) => format!("`{name}` at line {}", step.line),
        None => format!("the argument at line {}", step.line),
    };
    let reason = if deps.is_empty() { String::new() } else { format!(" ({})", explain(&deps)) };
    Some(Raw {
        rule: Rule::RaggedGather,
        line: call.line,
        column: Some(call.column),
        keyword: None,
        message: format!(
            "{} gathers `{}`, whose shape comes from {what} in {origin}{reason}: ranks with \
             less data send a smaller tensor and the gather fails or hangs",
            site.describe(),
            short(input),
        ),
    })
}

/// The rank-local shape fact of a step, if any: (step, description, dependence).
fn local_shape<'s>(
    ctx: &Context<'_>,
    step: &'s ValueStep,
    all: &[ValueStep],
) -> Option<(&'s ValueStep, String, Vec<Dependence>)> {
    let local = |deps: &Vec<Dependence>| {
        deps.iter().any(|d| matches!(d.kind, DependenceKind::RankId | DependenceKind::LocalData))
    };
    step.features.iter().find_map(|feature| match feature {
        ValueFeature::DataDependentShape { call } => {
            Some((step, format!("`{call}` (a data-dependent shape)"), Vec::new()))
        }
        ValueFeature::Slice { bounds } => {
            let deps: Vec<Dependence> = bounds
                .split(':')
                .filter(|b| !b.trim().is_empty())
                .flat_map(|b| ctx.dependence(step.line, b))
                .collect();
            local(&deps).then(|| (step, format!("the slice `[{bounds}]`"), deps))
        }
        ValueFeature::Length { of } => {
            let deps = ctx.dependence(step.line, of);
            local(&deps).then(|| (step, format!("the length of `{}`", short(of)), deps))
        }
        ValueFeature::Concat { list } => {
            let name = root_ident(list);
            let built_here = all.iter().any(|s| {
                s.name.as_deref() == Some(name)
                    && s.kind == StepKind::Value
                    && s.text.as_deref().is_some_and(|t| matches!(t.trim(), "[]" | "list()"))
            });
            // `parts.append(empty(shard_numel_padded))`: the list is padded to a common size.
            let padded = ctx.outline.calls.iter().any(|c| {
                c.callee == format!("{name}.append")
                    && c.function == step.function
                    && c.arguments.iter().any(|a| a.to_ascii_lowercase().contains("pad"))
            });
            (built_here && !padded)
                .then(|| (step, format!("`{list}`, a list grown on each rank"), Vec::new()))
        }
        _ => None,
    })
}

fn per_rank_dtype(ctx: &Context<'_>, site: &Site<'_>) -> Option<Raw> {
    let call = site.call;
    let tensors = call.arguments.iter().chain(
        call.keywords
            .iter()
            .filter(|(k, _)| !NON_TENSOR_KEYWORDS.contains(&k.as_str()))
            .map(|(_, v)| v),
    );
    for arg in tensors {
        for step in ctx.module.trace_value(call.line, arg) {
            for feature in &step.features {
                let ValueFeature::Dtype { expr } = feature else { continue };
                let (deps, via) = dtype_dependence(ctx, step.line, expr);
                if deps.is_empty() {
                    continue;
                }
                return Some(Raw {
                    rule: Rule::RankDependentDtype,
                    line: call.line,
                    column: Some(call.column),
                    keyword: None,
                    message: format!(
                        "{} sends `{}` cast to `{}` (line {}{via}), a dtype that can differ \
                         across ranks ({}): ranks that disagree exchange mismatched buffers",
                        site.describe(),
                        short(arg),
                        short(expr),
                        step.line,
                        explain(&deps),
                    ),
                });
            }
        }
    }
    None
}

/// Why a dtype expression can differ across ranks, and through which call of this file when
/// it is a parameter of its function (the callers decide it).
fn dtype_dependence(ctx: &Context<'_>, line: u32, expr: &str) -> (Vec<Dependence>, String) {
    let deps = dtype_reasons(ctx.dependence(line, expr));
    if !deps.is_empty() {
        return (deps, String::new());
    }
    for step in ctx.module.trace_value(line, expr) {
        if step.kind != StepKind::Parameter {
            continue;
        }
        let (Some(name), Some(def)) = (step.name.as_deref(), step.function) else { continue };
        let Some(function) = ctx.function(def) else { continue };
        let Some(position) = function.parameters.iter().position(|p| p == name) else {
            continue;
        };
        for caller in ctx.callers_of(&function.name) {
            // Methods called through `self.` do not pass `self` positionally.
            let offset = usize::from(
                caller.callee.starts_with("self.") || caller.callee.starts_with("cls."),
            );
            let positional = position.checked_sub(offset).and_then(|i| caller.arguments.get(i));
            let Some(passed) = caller.keyword(name).or(positional.map(String::as_str)) else {
                continue;
            };
            let deps = dtype_reasons(ctx.dependence(caller.line, passed));
            if !deps.is_empty() {
                let via = format!(
                    ", passed as `{}` by `{}` at line {}",
                    short(passed),
                    call_text(caller),
                    caller.line
                );
                return (deps, via);
            }
        }
    }
    (Vec::new(), String::new())
}

/// The reasons a dtype can differ across ranks. Rank-local *data* is not one: the values in
/// `grad` differ from rank to rank, `grad.dtype` does not.
fn dtype_reasons(deps: Vec<Dependence>) -> Vec<Dependence> {
    deps.into_iter()
        .filter(|d| !matches!(d.kind, DependenceKind::LocalData | DependenceKind::Exception))
        .collect()
}
