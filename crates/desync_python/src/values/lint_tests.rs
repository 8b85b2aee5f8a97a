//! Shapes the lint relies on: properties of the project's classes, table return types
//! (`deepspeed.initialize`), and the legacy launcher's `--local_rank` argument.

use super::Analysis;
use crate::Module;
use crate::syntax::types::DependenceKind::{self, RankId};

fn kinds(src: &str, marker: &str, expr: &str) -> Vec<DependenceKind> {
    let line = src.lines().position(|l| l.contains(marker)).expect("marker") as u32 + 1;
    let m = Module::parse(src);
    Analysis::default().dependence(&m, line, expr).dependence.iter().map(|d| d.kind).collect()
}

#[test]
fn a_property_reads_what_its_method_returns() {
    let src = "\
import torch.distributed as dist
from accelerate import Accelerator

class Trainer:
    def __init__(self):
        self.accelerator = Accelerator()

    @property
    def is_main(self):
        return self.accelerator.is_main_process

    @property
    def rank(self):
        return dist.get_rank() if dist.is_initialized() else 0

    def step(self):
        pass  # <use>
";
    assert_eq!(kinds(src, "# <use>", "self.is_main"), [RankId]);
    assert_eq!(kinds(src, "# <use>", "self.rank != 0"), [RankId]);
}

#[test]
fn table_return_types_resolve_tuple_elements() {
    let src = "\
import deepspeed

def main(args, model):
    engine, _, loader, _ = deepspeed.initialize(args=args, model=model)
    engine.save_checkpoint('x')  # <use>
";
    let m = Module::parse(src);
    let line = src.lines().position(|l| l.contains("# <use>")).unwrap() as u32 + 1;
    let q = Analysis::default().qualified_name(&m, line, "engine.save_checkpoint");
    assert_eq!(q.as_deref(), Some("deepspeed.DeepSpeedEngine.save_checkpoint"));
    assert_eq!(kinds(src, "# <use>", "engine.global_rank == 0"), [RankId]);
}

#[test]
fn the_legacy_launchers_local_rank_argument_is_the_rank() {
    let src = "\
import argparse

parser = argparse.ArgumentParser()
parser.add_argument('--local_rank', type=int, default=-1)
args = parser.parse_args()
x = 1  # <use>
";
    assert_eq!(kinds(src, "# <use>", "args.local_rank == 0"), [RankId]);
    assert!(kinds(src, "# <use>", "args.lr > 0").is_empty());
}

#[test]
fn single_process_exits_and_distributed_checks_decide_nothing() {
    let src = "\
import os
import torch
import torch.distributed as dist

RANK = int(os.getenv('RANK', -1))

def all_agree(flag):
    if not dist.is_initialized():
        return flag
    t = torch.tensor([flag])
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())

def step(stop):
    if RANK != -1:
        stop = False
    x = 1  # <use>
";
    // The single-process `return flag` says nothing about what ranks see.
    assert!(kinds(src, "# <use>", "all_agree(RANK == 0)").is_empty());
    // Whether the job is distributed is the same on every rank, also as control dependence.
    assert!(kinds(src, "# <use>", "stop").is_empty());
    assert_eq!(kinds(src, "# <use>", "RANK == 0"), [RankId]);
}

#[test]
fn file_probes_and_reads_are_matched_by_the_path_they_name() {
    let src = "\
from os.path import isfile as have
import torch as T

def exists(p):
    return True

def load(p, q):
    if have(p) and q.exists() and exists(q):
        if T.load(q) is None:
            pass
        state = T.load(p)
        text = q.read_text()
";
    let m = Module::parse(src);
    let analysis = Analysis::default();
    let probes = analysis.file_probes(&m, 8, "have(p) and q.exists() and exists(q)");
    let paths: Vec<&str> = probes.iter().map(|p| p.path.as_str()).collect();
    // The project's own `exists` is not the library's probe.
    assert_eq!(paths, ["p", "q"]);
    assert_eq!(probes[0].probe, "have(p)");
    assert_eq!(analysis.file_read(&m, 9, 12, "p"), Some((11, "T.load(p)".to_owned())));
    assert_eq!(analysis.file_read(&m, 9, 12, "q"), Some((9, "T.load(q)".to_owned())));
    assert_eq!(analysis.file_read(&m, 11, 11, "q"), None);
}

#[test]
fn a_path_read_through_wrappers_is_the_path_probed() {
    let src = "\
import os
from pathlib import Path
import torch

def read(where):
    return torch.load(where)

def load(p):
    if Path(p).resolve().exists():
        state = torch.load(str(Path(p)))
        other = torch.load(Path(p) / 'x')
        again = read(Path(p))
";
    let m = Module::parse(src);
    let analysis = Analysis::default();
    let probes = analysis.file_probes(&m, 9, "Path(p).resolve().exists()");
    assert_eq!(probes.iter().map(|p| p.path.as_str()).collect::<Vec<_>>(), ["p"]);
    // `Path(p) / 'x'` is another file.
    assert_eq!(
        analysis.file_read(&m, 10, 11, "p"),
        Some((10, "torch.load(str(Path(p)))".to_owned()))
    );
    assert_eq!(analysis.file_read(&m, 11, 11, "p"), None);
    // A project function handed `Path(p)` reads `p`.
    assert_eq!(analysis.file_read(&m, 12, 12, "p"), Some((12, "read(Path(p))".to_owned())));
}
