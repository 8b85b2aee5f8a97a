//! DSY003: an `except` clause that swallows an error (no `raise`, no process exit) around a
//! collective, or before one in the same loop iteration. Only the ranks that raised run the
//! handler, so:
//!
//! - a collective in the `try` body is skipped on those ranks (the error came first), and
//! - a `continue`/`break`/`return` in the handler skips the collectives after the `try` in
//!   this iteration, in later iterations, or in the rest of the function.
//!
//! The finding sits on the handler's jump when it has one (that is the line to change), else
//! on the `except` clause.

use desync_python::knowledge::knowledge;
use desync_python::{Construct, Handler, SiteVia, TryBlock};

use super::Raw;
use crate::context::{Context, Site};
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let mut out = Vec::new();
    for block in &ctx.outline.tries {
        for handler in block.handlers.iter().filter(|h| !h.propagates) {
            let around = skipped_inside(ctx, block, handler);
            let after = skipped_after(ctx, block, handler);
            if after.is_none() && replaces_the_failed_collective(ctx, block, handler) {
                continue;
            }
            if retries_the_poll(ctx, block, handler) {
                continue;
            }
            let Some(site) = after.or(around) else { continue };
            if commands_of_own_receive_loop(ctx, block) {
                continue;
            }
            // `try: from olmo_core.nn.hf import convert` / `except ImportError: return`: an
            // import (or a probe of the node type) fails on every rank or on none.
            if raised_alike(ctx, block, handler)
                || ctx.analysis().probes_environment(ctx.module, block.line)
            {
                continue;
            }
            let clause = handler.exception.as_deref().map_or_else(
                || "a bare `except`".to_owned(),
                |e| format!("`except {}`", super::short(e)),
            );
            let (line, column, keyword, how) = match handler.jump {
                Some(jump) if after.is_some() => {
                    let keyword = keyword(jump.construct);
                    let how = format!("then `{keyword}` skips");
                    (jump.line, None, Some(keyword), how)
                }
                _ => (handler.line, Some(handler.column), Some("except"), "skips".to_owned()),
            };
            let message = format!(
                "{clause} at line {} swallows the error on the ranks that raised and {how} {}, \
                 which the other ranks issue",
                handler.line,
                site.describe(),
            );
            out.push(Raw {
                rule: Rule::SwallowedException,
                line,
                column,
                keyword,
                message,
                indirect: false,
            });
        }
    }
    out
}

/// The first collective of the `try` body that the handler can have skipped. A collective
/// called on the body's first line runs before anything else in the `try` can raise, so only
/// its own failure (or its arguments') reaches the handler before it: when the handler catches
/// only classes a failing collective never raises (`except ValueError` around
/// `dist.all_reduce(counts); rows = parse(path)`, the table's `not_collective_failures`), the
/// error came after it, and only the collectives after that line can be skipped. A helper
/// called there is such a collective only when its body issues its first collective before
/// anything that can raise such an error on some ranks (it only builds the payload first:
/// `SiteVia::Helper::leads`); most helpers do other work first (Lightning's `advance` fetches
/// the batch, and the loader's `StopIteration`, before the step's collectives).
fn skipped_inside<'c>(
    ctx: &'c Context<'_>,
    block: &TryBlock,
    handler: &Handler,
) -> Option<&'c Site<'c>> {
    let mut sites = ctx.sites_in(block.function, block.body.first, block.body.last);
    // `except ProjectError:` catches only what the project raises, never a failing
    // collective's error: the collectives before every such `raise` run on every rank.
    if let Some(first) =
        ctx.collectives.skipped_by_project_error(ctx.module, block.line, handler.line)
    {
        let first = first?;
        return sites.find(|s| (s.line(), s.site.column) >= first);
    }
    // A collective that nothing before it in the `try` can fail ahead of on some ranks only
    // (the body only builds its payload from arguments: `flag = torch.tensor([int(ok)]);
    // dist.all_reduce(flag)`): what the handler catches there is the collective's own failure,
    // which every rank of its group meets, so no rank skips it alone.
    let own_failure = |s: &Site<'_>| {
        matches!(&s.site.via, SiteVia::Table(q) if knowledge().issues_one_collective(q))
            && ctx.analysis().nothing_raises_before(ctx.module, s.line())
    };
    if catches_collective_failures(handler) {
        return sites.find(|s| !own_failure(s));
    }
    let runs_first = |s: &Site<'_>| {
        s.line() == block.body.first
            && matches!(s.site.via, SiteVia::Table(_) | SiteVia::Helper { leads: true, .. })
    };
    sites.find(|s| !runs_first(s) && !own_failure(s))
}

/// Whether the handler can catch what a failing collective raises: a bare `except`, or any
/// class but those of the table's `not_collective_failures` (a class of the project, a name
/// bound elsewhere, `RuntimeError` and its bases).
fn catches_collective_failures(handler: &Handler) -> bool {
    !handler.caught.as_ref().is_some_and(|names| {
        !names.is_empty() && names.iter().all(|name| knowledge().is_not_a_collective_failure(name))
    })
}

/// `try: dist.barrier()` / `except RuntimeError: dist.all_reduce(flag)`: the `try` issues its
/// collectives on its first line only, so nothing before them can raise and skip them (the
/// error is theirs), and the handler issues a collective in their place: a fallback the author
/// wrote for a failure every rank meets alike (a backend that lacks the barrier), not a skip.
/// A handler that swallows a collective's failure and issues nothing stays a finding.
fn replaces_the_failed_collective(ctx: &Context<'_>, block: &TryBlock, handler: &Handler) -> bool {
    let mut guarded = ctx.sites_in(block.function, block.body.first, block.body.last).peekable();
    guarded.peek().is_some()
        && guarded.all(|s| s.line() == block.body.first)
        && ctx.sites_in(block.function, handler.body.first, handler.body.last).next().is_some()
}

/// `while running: try: item = q.get(timeout=1); ...; except queue.Empty: continue`: the
/// handler catches only what a queue's poll raises when nothing came in time (the table's
/// `poll_timeouts`), the `try` opens with its only poll, and the handler goes back to the top
/// of a loop that issues no collective before the `try`: the rank that found nothing polls
/// again and reaches the collectives after the poll once its item comes. They are deferred,
/// not skipped (a rank whose poll never succeeds hangs its peers either way: that is a stuck
/// producer, not a skipped collective).
fn retries_the_poll(ctx: &Context<'_>, block: &TryBlock, handler: &Handler) -> bool {
    let (Some(jump), Some(names)) = (handler.jump.as_ref(), handler.caught.as_ref()) else {
        return false;
    };
    if !matches!(jump.construct, Construct::Continue) || names.is_empty() {
        return false;
    }
    let Some(lp) = ctx.innermost_loop(block.function, block.line) else { return false };
    let analysis = ctx.analysis();
    names.iter().all(|name| {
        analysis
            .qualified_name(ctx.module, handler.line, name)
            .is_some_and(|q| knowledge().is_poll_timeout(&q))
    }) && ctx.sites_in(block.function, lp.line, block.line.saturating_sub(1)).next().is_none()
        && analysis.opens_with_the_only_poll(ctx.module, block.line)
}

/// The first collective the handler's jump skips after the `try` statement.
fn skipped_after<'c>(
    ctx: &'c Context<'_>,
    block: &TryBlock,
    handler: &Handler,
) -> Option<&'c Site<'c>> {
    let jump = handler.jump?;
    let function = block.function;
    // The innermost loop of the same function whose body holds the `try`.
    let lp = ctx.innermost_loop(function, block.line);
    let end_of_function = function.and_then(|f| ctx.function(f)).map_or(u32::MAX, |f| f.end_line);
    match jump.construct {
        Construct::Continue => {
            let lp = lp?;
            ctx.sites_in(function, block.end_line + 1, lp.body.last).next()
        }
        // Later iterations are skipped too: any collective of the loop body.
        Construct::Break => {
            let lp = lp?;
            ctx.sites_in(function, lp.body.first, lp.body.last)
                .find(|s| !(block.body.first..=block.end_line).contains(&s.line()))
        }
        Construct::Return => {
            let later = ctx.sites_in(function, block.end_line + 1, end_of_function).next();
            later.or_else(|| {
                let lp = lp?;
                ctx.sites_in(function, lp.body.first, lp.body.last).next()
            })
        }
        _ => None,
    }
}

/// Whether every collective the handler can skip (those of the `try` body and after it, to the
/// end of the function) is a command its own class's receive loop serves: a method of a class
/// whose workers sit in a `serve()` loop receiving from the source, and whose collectives from
/// here on are all of the kinds that loop issues, on the default group (sentence-transformers'
/// distributed inference: `__call__` scatters the shards and gathers the results that
/// `serve()` receives and answers). The method is the source's side of the protocol: when it
/// skips them, the source sends one command fewer, and the workers wait for the next one, or
/// for the stop, as they do between calls.
fn commands_of_own_receive_loop(ctx: &Context<'_>, block: &TryBlock) -> bool {
    let Some(function) = block.function else { return false };
    let end = ctx.function(function).map_or(block.end_line, |f| f.end_line);
    let mut skippable = ctx.sites_in(block.function, block.body.first, end).peekable();
    if skippable.peek().is_none() {
        return false;
    }
    let served = ctx.collectives.served_by_own_class(ctx.module, function);
    !served.is_empty()
        && skippable.all(|s| s.group().is_none() && s.site.ops.iter().all(|op| served.contains(op)))
}

fn keyword(construct: Construct) -> &'static str {
    match construct {
        Construct::Continue => "continue",
        Construct::Break => "break",
        Construct::Return => "return",
        _ => "raise",
    }
}

/// The most values of a `try` body [`raised_alike`] follows (real handlers of value errors
/// guard a few statements: a lookup, a parse, a call).
const MAX_VALUES_READ: usize = 256;

/// Whether every rank raises what the handler catches alike: it catches only classes raised
/// from the values an operation works on (the table's `value_errors`: `ValueError`,
/// `KeyError`...), and nothing the `try` body evaluates can differ across ranks as far as the
/// flow analysis follows it (the same evidence a rank-dependent test needs) — no input of the
/// function left open either: a parameter no call in view passes can be the rank's own
/// (`state_dict.pop(fqn)` on the rank's shard of a checkpoint). Megatron's text server
/// (`send_do_generate()` then `run_mcore_engine(self.engine, prompts, ...)` under
/// `except ValueError`) validates settings every rank receives by broadcast.
fn raised_alike(ctx: &Context<'_>, block: &TryBlock, handler: &Handler) -> bool {
    let Some(names) = &handler.caught else { return false };
    if names.is_empty() || !names.iter().all(|n| knowledge().is_raised_from_values(n)) {
        return false;
    }
    let function = block.function.and_then(|line| ctx.function(line));
    // The receiver of a method (`self`, `cls`) is the object every rank built alike; its
    // fields are followed by the analysis.
    let inputs = function.map_or(&[][..], |f| {
        let receiver = usize::from(ctx.module.is_method(f.def_line));
        f.parameters.get(receiver..).unwrap_or(&[])
    });
    let read = ctx.module.evaluated_in(block.body.first, block.body.last);
    // Each value is followed back through its assignments; a `try` around thousands of
    // statements (generated code) keeps its finding rather than cost seconds.
    if read.len() > MAX_VALUES_READ {
        return false;
    }
    read.into_iter().all(|(line, text)| {
        let finding = ctx.analysis().condition(ctx.module, line, text);
        let open = finding.parameters.iter().any(|p| {
            inputs.contains(p)
                && function.is_some_and(|f| {
                    ctx.collectives.arguments_for(ctx.module, f.def_line, p).is_empty()
                })
        });
        !open && ctx.resolved(line, finding).is_empty()
    })
}
