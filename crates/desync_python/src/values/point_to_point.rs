//! Whether a module exchanges point-to-point messages (send/recv between pairs of ranks).
//!
//! Gloo's Flight Recorder records collectives, not sends and receives: in a job that uses them
//! (a pipelining schedule, `isend`/`irecv`, `batch_isend_irecv`), the dumps show only the
//! collectives between the pipeline's exchanges, and the seqs they show may not be where the
//! ranks parted. Which names exchange messages is the table's (`op = "p2p"` rows and
//! `[point_to_point_modules]`); this finds the first use of one in a module: an import of it,
//! or a call that resolves to it through the module's imports.

use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

use super::Analysis;
use crate::names::knowledge::knowledge;
use crate::syntax::module::Module;

/// A line of the user's code that uses a point-to-point API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointToPointUse {
    /// 1-based line of the import or call.
    pub line: u32,
    /// The qualified name it uses (`torch.distributed.pipelining.Schedule1F1B`).
    pub name: String,
}

impl Analysis<'_> {
    /// The first use of a point-to-point API in `module`, in source order of the two kinds
    /// of evidence: imports first (`from torch.distributed.pipelining import Schedule1F1B`),
    /// then calls resolved through the imports (`dist.isend(t, dst)`).
    pub fn point_to_point_use(&self, module: &Module) -> Option<PointToPointUse> {
        let table = knowledge();
        let mut found: Option<PointToPointUse> = None;
        crate::syntax::tree::walk_all(module.body(), &mut |stmt| {
            let names: Vec<String> = match stmt {
                Stmt::Import(s) => s.names.iter().map(|a| a.name.id.to_string()).collect(),
                // Relative imports are the project's own modules.
                Stmt::ImportFrom(s) if s.level == 0 => {
                    let base = s.module.as_ref().map_or("", |m| m.id.as_str());
                    s.names.iter().map(|a| format!("{base}.{}", a.name.id)).collect()
                }
                _ => Vec::new(),
            };
            for name in names {
                let name = table.canonical(&name);
                if found.is_none() && table.is_point_to_point(&name) {
                    found = Some(PointToPointUse { line: module.line_of(stmt.start()), name });
                }
            }
        });
        if found.is_some() {
            return found;
        }
        // Calls: only those whose last segment is a point-to-point row's are resolved (a
        // resolution parses the callee again).
        let words: Vec<&str> = table
            .apis()
            .iter()
            .filter(|a| a.is_point_to_point())
            .flat_map(|a| a.names.iter().map(|n| n.rsplit('.').next().unwrap_or(n)))
            .collect();
        let mut calls = Calls { words: &words, found: Vec::new() };
        for stmt in module.body() {
            calls.visit_stmt(stmt);
        }
        calls.found.into_iter().find_map(|callee| {
            let line = module.line_of(callee.start());
            let name = self.qualified_name(module, line, module.text(callee.range()))?;
            let name = table.canonical(&name);
            table.is_point_to_point(&name).then_some(PointToPointUse { line, name })
        })
    }
}

/// Callees whose last segment is one of `words`, in source order.
struct Calls<'w, 'a> {
    words: &'w [&'w str],
    found: Vec<&'a Expr>,
}

impl<'a> Visitor<'a> for Calls<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            let last = match &*call.func {
                Expr::Attribute(a) => Some(a.attr.id.as_str()),
                Expr::Name(n) => Some(n.id.as_str()),
                _ => None,
            };
            if last.is_some_and(|w| self.words.contains(&w)) {
                self.found.push(&call.func);
            }
        }
        walk_expr(self, expr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_use(src: &str) -> Option<PointToPointUse> {
        Analysis::default().point_to_point_use(&Module::parse(src))
    }

    /// A schedule imported from the pipelining package, under any alias; a send through the
    /// module alias the file chose; and files that only reduce, or name a `send` of their own.
    #[test]
    fn sends_and_pipeline_schedules_are_found_by_what_they_resolve_to() {
        let pipe = "import torch\nfrom torch.distributed.pipelining import ScheduleGPipe as Sched\n\ndef run(stage):\n    return Sched(stage, 4)\n";
        let found = first_use(pipe).expect("a pipelining schedule");
        assert_eq!(found.line, 2);
        assert_eq!(found.name, "torch.distributed.pipelining.ScheduleGPipe");

        let ring = "import torch.distributed as c10d\n\ndef ring(t, peer):\n    req = c10d.isend(t, peer)\n    req.wait()\n";
        let found = first_use(ring).expect("an isend");
        assert_eq!((found.line, found.name.as_str()), (4, "torch.distributed.isend"));

        let reduce_only =
            "import torch.distributed as dist\n\ndef step(t):\n    dist.all_reduce(t)\n";
        assert_eq!(first_use(reduce_only), None);
        let own_send = "class Mailbox:\n    def send(self, x):\n        pass\n\ndef go(box):\n    box.send(1)\n";
        assert_eq!(first_use(own_send), None);
    }
}
