//! `explain_call`: for a metadata mismatch (same call site, different sizes or dtypes), the
//! collective at a line and where each argument comes from — the assignment that feeds it and
//! why its value can differ across ranks (`buf = torch.zeros(len(shard))` → rank-local data).

use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

use crate::names::bindings::{self, Scope, Source};
use crate::syntax::expr::{self, last_segment, root_name};
use crate::syntax::module::{Module, call_at};
use crate::syntax::patterns::{COLLECTIVES, IMPLICIT_COLLECTIVES};
use crate::syntax::tree::{self, header_exprs};
use crate::syntax::types::{ArgOrigin, CallOrigin, CallSite};
use crate::values::Analysis;

pub(crate) fn explain(cx: &Analysis<'_>, module: &Module, line: u32) -> Option<CallOrigin> {
    let call = call_at(module, line)?;
    let scope = Scope::at(module, line);
    let use_at = call.start();
    let positional = call.arguments.args.iter().map(|a| (a.range(), a));
    let keywords = call.arguments.keywords.iter().map(|k| (k.range(), &k.value));
    let arguments = positional
        .chain(keywords)
        .map(|(range, value)| {
            let deps = cx.dependence_of(module, value, use_at);
            let (defined_at, assignment) = origin(module, scope, value, use_at).unzip();
            let (dependence, parameters) = (deps.to_public(), deps.params);
            ArgOrigin {
                text: module.text(range).to_owned(),
                defined_at,
                assignment,
                dependence,
                parameters,
            }
        })
        .collect();
    Some(CallOrigin {
        line: module.line_of(call.start()),
        callee: module.text(call.func.range()).to_owned(),
        arguments,
    })
}

/// Calls whose last segment names a collective, in every scope of the module.
pub(crate) fn collectives(module: &Module) -> Vec<CallSite> {
    let mut out = Vec::new();
    // A worklist instead of recursion: nested `def`s are queued, not descended into.
    let mut scopes: Vec<&[Stmt]> = vec![module.body()];
    while let Some(suite) = scopes.pop() {
        tree::walk_scope(suite, &mut |stmt, _| {
            match stmt {
                Stmt::FunctionDef(d) => scopes.push(&d.body),
                Stmt::ClassDef(c) => scopes.push(&c.body),
                _ => {}
            }
            for e in header_exprs(stmt) {
                expr::walk(e, &mut |x| {
                    let Expr::Call(c) = x else { return };
                    let Some(last) = last_segment(&c.func) else { return };
                    let implicit = IMPLICIT_COLLECTIVES.contains(&last);
                    if implicit || COLLECTIVES.contains(&last) {
                        out.push(CallSite {
                            line: module.line_of(c.start()),
                            callee: module.text(c.func.range()).to_owned(),
                            implicit,
                        });
                    }
                });
            }
        });
    }
    out.sort_by_key(|c| c.line);
    out
}

/// Line and text of the assignment that feeds `value`'s root variable.
fn origin(
    module: &Module,
    scope: Scope<'_>,
    value: &Expr,
    use_at: TextSize,
) -> Option<(u32, String)> {
    let name = root_name(value)?;
    let binding = bindings::lookup(module, scope, name, use_at)?;
    match binding.source {
        Source::Value(_)
        | Source::Augmented(_)
        | Source::LoopItem(_)
        | Source::LoopElement(..)
        | Source::Element(..)
        | Source::LoopCounter(_)
        | Source::WithItem(_)
        | Source::Caught => Some((module.line_of(binding.at), module.trimmed_line_at(binding.at))),
        Source::Parameter | Source::Import { .. } | Source::Function(_) | Source::Class(_) => None,
    }
}

/// The collective calls of one file and where their arguments come from.
impl Module {
    /// [`Module::explain_call`] with the dependence computed by `cx`.
    pub fn explain_call_with(&self, cx: &crate::Analysis<'_>, line: u32) -> Option<CallOrigin> {
        crate::sites::call::explain(cx, self, line)
    }

    /// The call at `line` (a collective, preferably) and where its arguments come from.
    pub fn explain_call(&self, line: u32) -> Option<CallOrigin> {
        crate::sites::call::explain(&crate::Analysis::default(), self, line)
    }

    /// The collective calls of the file (nested functions included), in source order.
    pub fn collective_calls(&self) -> Vec<CallSite> {
        crate::sites::call::collectives(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::types::DependenceKind;

    const SRC: &str = "\
import torch
import torch.distributed as dist

def sync_stats(shard, out):
    n_local = len(shard)
    buf = torch.zeros(n_local, dtype=torch.float32)
    buf.copy_(shard.sum(0))
    dist.all_gather_into_tensor(out, buf)
    work = dist.all_reduce(
        buf, op=dist.ReduceOp.SUM, async_op=True
    )
    loss.backward()
";

    #[test]
    fn explains_arguments_of_a_collective() {
        let m = Module::parse(SRC);
        let call = m.explain_call(8).unwrap();
        assert_eq!(call.callee, "dist.all_gather_into_tensor");
        assert_eq!(call.line, 8);
        let args: Vec<&str> = call.arguments.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(args, ["out", "buf"]);
        let buf = &call.arguments[1];
        assert_eq!(buf.defined_at, Some(6));
        assert_eq!(
            buf.assignment.as_deref(),
            Some("buf = torch.zeros(n_local, dtype=torch.float32)")
        );
        // Sized by a parameter: the caller's frame says what was passed.
        assert_eq!(buf.dependence[0].kind, DependenceKind::Unknown);
        assert_eq!(buf.parameters, ["shard"]);
        let out = &call.arguments[0];
        assert_eq!(out.defined_at, None);
        assert_eq!(out.dependence[0].kind, DependenceKind::Unknown);
        assert_eq!(out.parameters, ["out"]);
    }

    #[test]
    fn multi_line_calls_and_keywords() {
        let m = Module::parse(SRC);
        let call = m.explain_call(9).unwrap();
        assert_eq!(call.callee, "dist.all_reduce");
        assert_eq!(call.arguments.len(), 3);
        assert_eq!(call.arguments[1].text, "op=dist.ReduceOp.SUM");
        assert!(call.arguments[1].dependence.is_empty());
        // A line inside the call's argument list still names the call.
        assert_eq!(m.explain_call(10).unwrap().callee, "dist.all_reduce");
    }

    #[test]
    fn lists_collective_calls_in_every_scope() {
        let m = Module::parse(SRC);
        let sites = m.collective_calls();
        let got: Vec<(u32, &str, bool)> =
            sites.iter().map(|c| (c.line, c.callee.as_str(), c.implicit)).collect();
        assert_eq!(
            got,
            [
                (8, "dist.all_gather_into_tensor", false),
                (9, "dist.all_reduce", false),
                (12, "loss.backward", true)
            ]
        );
    }

    #[test]
    fn implicit_collectives_and_misses() {
        let m = Module::parse(SRC);
        assert_eq!(m.explain_call(12).unwrap().callee, "loss.backward");
        assert!(m.explain_call(3).is_none());
        assert!(m.explain_call(0).is_none());
        assert!(m.explain_call(500).is_none());
    }
}
