//! The outline of a small training script: every fact the linter reads, checked once.

use crate::{Construct, Jump, Module};

const SRC: &str = "\
import torch
import torch.distributed as dist
from torch.distributed import all_reduce as ar, barrier
from . import helpers
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def sync(self, x):
        ar(x)

def train(rank, loader, model):
    model = DDP(model)
    for step, batch in enumerate(loader):
        if rank == 0:
            dist.all_reduce(batch, group=None)
        elif step > 3:
            pass
        else:
            print(rank)
        try:
            loss = model(batch)
        except (ValueError, KeyError):
            continue
        except RuntimeError:
            log()
            raise
        except Exception:
            sys.exit(1)
    while not done():
        barrier()
";

#[test]
fn imports_functions_and_calls() {
    let o = Module::parse(SRC).outline();
    let imports: Vec<(&str, Option<&str>, &str)> = o
        .imports
        .iter()
        .map(|i| (i.module.as_str(), i.name.as_deref(), i.alias.as_str()))
        .collect();
    assert_eq!(
        imports,
        [
            ("torch", None, "torch"),
            ("torch.distributed", None, "dist"),
            ("torch.distributed", Some("all_reduce"), "ar"),
            ("torch.distributed", Some("barrier"), "barrier"),
            (".", Some("helpers"), "helpers"),
            ("torch.nn.parallel", Some("DistributedDataParallel"), "DDP"),
        ]
    );
    let functions: Vec<(&str, u32)> =
        o.functions.iter().map(|f| (f.name.as_str(), f.def_line)).collect();
    assert_eq!(functions, [("sync", 8), ("train", 11)]);

    let ddp = o.calls.iter().find(|c| c.callee == "DDP").unwrap();
    assert_eq!((ddp.line, ddp.column, ddp.function), (12, 13, Some(11)));
    assert_eq!(ddp.assigned_to, ["model"]);
    assert_eq!(ddp.arguments, ["model"]);
    let ar = o.calls.iter().find(|c| c.callee == "dist.all_reduce").unwrap();
    assert_eq!((ar.line, ar.column, ar.name()), (15, 13, "all_reduce"));
    assert_eq!(ar.keyword("group"), Some("None"));
    assert!(ar.assigned_to.is_empty());
    assert_eq!(o.calls.iter().find(|c| c.callee == "ar").unwrap().function, Some(8));
    assert!(o.calls.iter().any(|c| c.callee == "done" && c.line == 29));
    assert!(o.calls.windows(2).all(|w| (w[0].line, w[0].column) <= (w[1].line, w[1].column)));
}

#[test]
fn conditionals_loops_and_tries() {
    let o = Module::parse(SRC).outline();
    let c = &o.conditionals[0];
    assert_eq!((c.line, c.column, c.function), (14, 9, Some(11)));
    let clauses: Vec<(u32, Option<&str>, u32, u32)> =
        c.clauses.iter().map(|k| (k.line, k.test.as_deref(), k.body.first, k.body.last)).collect();
    assert_eq!(
        clauses,
        [(14, Some("rank == 0"), 15, 15), (16, Some("step > 3"), 17, 17), (18, None, 19, 19)]
    );
    assert!(c.has_else());

    let loops: Vec<(u32, bool, &str, u32, u32)> = o
        .loops
        .iter()
        .map(|l| (l.line, l.is_while, l.header.as_str(), l.body.first, l.body.last))
        .collect();
    assert_eq!(loops, [(13, false, "enumerate(loader)", 14, 28), (29, true, "not done()", 30, 30)]);

    let t = &o.tries[0];
    assert_eq!((t.line, t.body.first, t.body.last, t.end_line), (20, 21, 21, 28));
    let h: Vec<(u32, Option<&str>, Option<Jump>, bool)> =
        t.handlers.iter().map(|h| (h.line, h.exception.as_deref(), h.jump, h.propagates)).collect();
    assert_eq!(
        h,
        [
            (
                22,
                Some("(ValueError, KeyError)"),
                Some(Jump { construct: Construct::Continue, line: 23 }),
                false
            ),
            (24, Some("RuntimeError"), Some(Jump { construct: Construct::Raise, line: 26 }), true),
            (27, Some("Exception"), None, true),
        ]
    );
}

#[test]
fn empty_and_broken_sources() {
    assert_eq!(Module::parse("").outline(), crate::Outline::default());
    let o = Module::parse("dist.barrier()\nif x\n    y = (\n").outline();
    assert!(o.calls.iter().any(|c| c.callee == "dist.barrier"));
}

#[test]
fn jumps_and_handlers_that_swallow_on_some_paths() {
    let src = "\
def train(loader):
    for batch in loader:
        if batch is None:
            continue
        try:
            step(batch)
        except RuntimeError as err:
            if 'out of memory' in str(err):
                skip()
            else:
                raise
        try:
            step(batch)
        except ValueError:
            if bad():
                raise
            else:
                sys.exit(1)
        if done():
            break
    return 1
";
    let o = Module::parse(src).outline();
    let jumps: Vec<(u32, Construct)> = o.jumps.iter().map(|j| (j.line, j.construct)).collect();
    assert_eq!(jumps, [(4, Construct::Continue), (20, Construct::Break), (21, Construct::Return)]);
    let propagates: Vec<bool> =
        o.tries.iter().flat_map(|t| t.handlers.iter().map(|h| h.propagates)).collect();
    assert_eq!(propagates, [false, true]);
}

#[test]
fn a_handler_that_hands_the_caught_error_to_another_process_passes_it_on() {
    let src = "\
def serve(conn, requests, log):
    for request in requests:
        try:
            conn.send(save(request))
        except Exception as err:
            conn.send(err)
            return
        try:
            save(request)
        except Exception as err:
            conn.send(str(err))
        try:
            save(request)
        except Exception as err:
            log.put(request)
        try:
            save(request)
        except Exception:
            results.put(None)
";
    let o = Module::parse(src).outline();
    let propagates: Vec<bool> =
        o.tries.iter().flat_map(|t| t.handlers.iter().map(|h| h.propagates)).collect();
    // Only the exception object itself, handed to a method of the table, passes it on; its
    // text, or another value, reports nothing the other side raises.
    assert_eq!(propagates, [true, false, false, false]);
}
