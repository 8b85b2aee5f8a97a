//! DSY006 (and DSY005) for setup on some ranks only: a call of the table's `payload` rows —
//! what changes the payload of later collectives, such as `model.register_comm_hook(...)`
//! (fp16 gradient buckets), an autocast or mixed-precision policy, `DDP._set_static_graph()` —
//! made in one clause of an `if` whose test can differ across ranks, with no call of the same
//! API in the other clauses. The ranks that took the branch then issue every later collective
//! of the model with another dtype (or size) than their peers:
//!
//! ```python
//! if node_wants_compression(rank):          # true on the second node only
//!     model.register_comm_hook(None, fp16_compress_hook)
//! ```
//!
//! A setting a `with` block holds reaches only the collectives issued inside the block.
//!
//! The same data the bridge reads to explain such a hang (`Analysis::setup_calls`).

use desync_python::{Conditional, Dependence};

use super::{Raw, explain, indirect, short};
use crate::context::Context;
use crate::rule::Rule;

pub(super) fn check(ctx: &Context<'_>) -> Vec<Raw> {
    let setups = &ctx.setups;
    let mut out = Vec::new();
    for setup in setups {
        let rule = match setup.affects.as_str() {
            "dtype" => Rule::RankDependentDtype,
            "size" => Rule::RaggedGather,
            _ => continue,
        };
        let function = ctx.module.function_at(setup.line).map(|f| f.def_line);
        if reaches_no_collective(ctx, function, setup) {
            continue;
        }
        let Some((cond, clause)) = super::paths::innermost_clause(ctx, function, setup.line) else {
            continue;
        };
        if every_clause_calls(cond, clause, setups, &setup.qualified) {
            continue;
        }
        let Some((test, line, deps)) = deciding_test(ctx, cond, clause) else { continue };
        // On the branch, like DSY001: the decision is what to fix or suppress.
        out.push(Raw {
            rule,
            line,
            column: None,
            keyword: Some(if line == cond.line { "if" } else { "elif" }),
            message: format!(
                "`{}` at line {} changes the {} of every later collective it applies to, but \
                 only on the ranks where `{}` holds: the test depends on {}, so those ranks send \
                 other buffers than their peers in the same collectives",
                short(&setup.source),
                setup.line,
                setup.affects,
                short(&test),
                explain(&deps),
            ),
            indirect: indirect(&deps),
        });
    }
    out
}

/// Whether the setting is one a `with` block holds (`with torch.autocast(...):`) and nothing
/// in that block issues a collective, directly or through a call the analysis follows: the
/// setting ends with the block, so no collective carries another dtype. A block that yields
/// (a context manager written as a generator) applies it to its caller's block instead.
fn reaches_no_collective(
    ctx: &Context<'_>,
    function: Option<u32>,
    setup: &desync_python::SetupCall,
) -> bool {
    let Some(block) = setup.block else { return false };
    !block.yields && ctx.sites_in(function, block.first, block.last).next().is_none()
}

/// Whether every other clause of `cond` (a missing `else` calls nothing) makes a call of the
/// same API.
fn every_clause_calls(
    cond: &Conditional,
    clause: usize,
    setups: &[desync_python::SetupCall],
    qualified: &str,
) -> bool {
    if !cond.has_else() {
        return false;
    }
    cond.clauses.iter().enumerate().filter(|(i, _)| *i != clause).all(|(_, c)| {
        setups
            .iter()
            .any(|s| s.qualified == qualified && (c.body.first..=c.body.last).contains(&s.line))
    })
}

/// The test that decides whether `clause` runs and can differ across ranks: its own, or one
/// of the earlier clauses' (an `else` runs when they fail).
fn deciding_test(
    ctx: &Context<'_>,
    cond: &Conditional,
    clause: usize,
) -> Option<(String, u32, Vec<Dependence>)> {
    cond.clauses[..=clause].iter().rev().find_map(|c| {
        let test = c.test.as_ref()?;
        let line = c.test_line.unwrap_or(c.line);
        let deps = ctx.dependence(line, test);
        (!deps.is_empty()).then(|| (test.clone(), line, deps))
    })
}
