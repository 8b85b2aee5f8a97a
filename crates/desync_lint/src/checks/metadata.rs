//! DSY005 and DSY006: collectives whose tensors can disagree in metadata across ranks, from
//! the flow analysis' size and dtype following
//! ([`desync_python::Collectives::size_dependence`], `dtype_dependence`).
//!
//! - DSY005: a gather (the table's `[[shape]]` rows name which argument must have the same
//!   size on every rank: `all_gather`'s input, `all_gather_into_tensor`'s...) of a tensor whose
//!   size comes from the rank or rank-local data: a length read from data, a slice with a
//!   rank- or data-dependent bound (`val_x[rank::world_size]`), a data-dependent shape
//!   (`nonzero()`), a list grown locally. Padded values and sizes agreed through a collective
//!   first are quiet, and so are sizes decided by the rank within other groups only
//!   ([`splits_group`]).
//! - DSY006: a collective whose tensor is cast to a dtype chosen per rank (`.to(comm_dtype)`
//!   with `comm_dtype` from an environment variable), followed into the callers of this file
//!   when the dtype is a parameter. Rank-local *data* is no reason: values differ across ranks,
//!   `x.dtype` does not. Object collectives (the table's `pickles` rows) have no dtype.

use desync_python::knowledge::knowledge;
use desync_python::{Dependence, DependenceKind, SiteVia};

use super::{Raw, explain, indirect, short};
use crate::context::{Context, Site, splits_group};
use crate::rule::Rule;

/// Keyword arguments that are not tensors.
const NON_TENSOR_KEYWORDS: &[&str] =
    &["group", "process_group", "pg", "op", "src", "dst", "async_op", "group_src", "group_dst"];

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for site in ctx.sites.iter().filter(|s| s.is_table_call() && !s.is_point_to_point()) {
        if let Some(raw) = ragged_gather(ctx, site) {
            out.push(raw);
        } else if let Some(raw) = per_rank_dtype(ctx, site) {
            out.push(raw);
        }
    }
    out
}

fn ragged_gather(ctx: &Context<'_>, site: &Site<'_>) -> Option<Raw> {
    let input = site.site.input.as_deref()?;
    let line = site.site.input_line?;
    let finding = ctx.collectives.size_dependence(ctx.module, line, input);
    let deps: Vec<Dependence> =
        finding.dependence.into_iter().filter(|d| d.kind != DependenceKind::Unknown).collect();
    // A size chosen by the rank within another group (`if dp_rank == 0:` before a gather on
    // `tp_group`) is the same across the gather's members, as for DSY001.
    if deps.is_empty() || !splits_group(&deps, site) {
        return None;
    }
    Some(Raw {
        rule: Rule::RaggedGather,
        line: site.line(),
        column: Some(site.site.column),
        keyword: None,
        message: format!(
            "{} gathers `{}`, whose size can differ across ranks ({}): ranks with less data \
             send a smaller tensor and the gather fails or hangs",
            site.describe(),
            short(input),
            explain(&deps),
        ),
        indirect: indirect(&deps),
    })
}

fn per_rank_dtype(ctx: &Context<'_>, site: &Site<'_>) -> Option<Raw> {
    // Only the table's tensor collectives exchange buffers whose dtypes must match: object
    // collectives pickle, state-dict and checkpoint APIs take dicts and paths, helpers are
    // checked at the collective inside them.
    let SiteVia::Table(q) = &site.site.via else { return None };
    if !knowledge().api(q).is_some_and(|a| a.tensors && !a.pickles) {
        return None;
    }
    let call = site.call?;
    let tensors = call.arguments.iter().chain(
        call.keywords
            .iter()
            .filter(|(k, _)| !NON_TENSOR_KEYWORDS.contains(&k.as_str()))
            .map(|(_, v)| v),
    );
    for arg in tensors {
        let finding = ctx.collectives.dtype_dependence(ctx.module, call.line, arg);
        let deps: Vec<Dependence> = finding
            .dependence
            .into_iter()
            .filter(|d| {
                !matches!(
                    d.kind,
                    DependenceKind::LocalData | DependenceKind::Exception | DependenceKind::Unknown
                )
            })
            .collect();
        if deps.is_empty() {
            continue;
        }
        return Some(Raw {
            rule: Rule::RankDependentDtype,
            line: site.line(),
            column: Some(site.site.column),
            keyword: None,
            message: format!(
                "{} sends `{}` with a dtype that can differ across ranks ({}): ranks that \
                 disagree exchange mismatched buffers",
                site.describe(),
                short(arg),
                explain(&deps),
            ),
            indirect: indirect(&deps),
        });
    }
    None
}
