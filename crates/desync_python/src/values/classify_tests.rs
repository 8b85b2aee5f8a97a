//! Classification of conditions and values, through `classify_expression`: every reason is
//! one the data shows, never one a variable's name suggests.

use crate::{DependenceKind, Module, classify_expression};
use DependenceKind::{Environment, Exception, LocalData, Randomness, RankId, Time, Unknown};

const TRAIN: &str = "\
import os
import time
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
WORLD_RANK = int(os.environ['RANK'])

def train(model, dataset, opt, cfg_path, flag):
    local_rank = int(os.getenv('LOCAL_RANK', '0'))
    start = time.monotonic()
    total = 0.0
    rank = dist.get_rank()
    for step, batch in enumerate(DataLoader(dataset)):
        out = model(batch)
        loss = out.loss
        total += loss.item()
        with open(cfg_path) as fh:
            text = fh.read()
        try:
            pass
        except RuntimeError as err:
            msg = str(err)
        x = 1  # probe line 23
";

fn kinds(expr: &str) -> Vec<DependenceKind> {
    let m = Module::parse(TRAIN);
    classify_expression(&m, 23, expr).into_iter().map(|d| d.kind).collect()
}

fn evidence(expr: &str) -> String {
    let m = Module::parse(TRAIN);
    classify_expression(&m, 23, expr).remove(0).evidence
}

#[test]
fn rank_ids() {
    for e in [
        "rank == 0",
        "local_rank != 0",
        "WORLD_RANK == 0",
        "dist.get_rank() == 0",
        "torch.distributed.get_rank() % 2",
        "os.environ['LOCAL_RANK'] == '0'",
        "int(os.environ.get('RANK', 0)) == 0",
    ] {
        assert_eq!(kinds(e), [RankId], "{e}");
    }
    assert_eq!(evidence("dist.get_rank() == 0"), "`dist.get_rank()`");
    assert_eq!(
        evidence("WORLD_RANK"),
        "`WORLD_RANK` = `int(os.environ['RANK'])` (line 6) ← `os.environ['RANK']`"
    );
    assert_eq!(
        evidence("local_rank"),
        "`local_rank` = `int(os.getenv('LOCAL_RANK', '0'))` (line 9) ← `os.getenv('LOCAL_RANK', '0')`"
    );
}

#[test]
fn names_alone_decide_nothing() {
    // Spelled like ranks, flags and data, but nothing in view says where they come from.
    for e in ["self.is_master", "args.local_rank == 0", "is_main_process()", "grad_norm > 1.0"] {
        assert_eq!(kinds(e), [Unknown], "{e}");
    }
}

#[test]
fn local_data() {
    for e in [
        "not torch.isfinite(loss)",
        "torch.isnan(out).any()",
        "loss.item() > 10",
        "total > 5",
        "len(batch) < 32",
        "out.logits.shape[0]",
    ] {
        assert!(kinds(e).contains(&LocalData), "{e}: {:?}", kinds(e));
    }
    let loss = evidence("loss > 0");
    assert!(
        loss.starts_with("`loss` = `out.loss` (line 15) ← `out` = `model(batch)` (line 14)"),
        "{loss}"
    );
    assert!(evidence("batch").contains("DataLoader(dataset)"));
    let total = evidence("total");
    assert!(total.starts_with("`total` updated with `loss.item()` (line 16)"), "{total}");
}

#[test]
fn other_kinds() {
    assert_eq!(kinds("time.monotonic() - start > 3600"), [Time]);
    assert_eq!(evidence("time.time() > 3"), "`time.time()`");
    assert_eq!(kinds("datetime.datetime.now().hour"), [Time]);
    assert_eq!(kinds("random.random() < 0.5"), [Randomness]);
    assert_eq!(kinds("np.random.rand() < 0.5"), [Randomness]);
    assert_eq!(kinds("torch.randint(0, 10, (1,)).item() == 3"), [Randomness]);
    assert_eq!(kinds("os.environ.get('DEBUG')"), [Environment]);
    assert_eq!(kinds("socket.gethostname() == 'node0'"), [Environment]);
    assert_eq!(kinds("platform.node()"), [Environment]);
    assert_eq!(kinds("os.path.exists('/ckpt')"), [Environment]);
    assert_eq!(kinds("text"), [Environment], "read from a file");
    assert_eq!(kinds("isinstance(err, TimeoutError)"), [Exception]);
    assert_eq!(kinds("msg.startswith('CUDA')"), [Exception]);
    assert_eq!(kinds("(time.time() > 1) or rank == 0"), [RankId, Time]);
}

#[test]
fn invariants_and_unknowns() {
    assert!(kinds("dist.get_world_size() > 1").is_empty());
    assert!(kinds("int(os.environ['WORLD_SIZE'])").is_empty());
    assert!(kinds("True").is_empty());
    assert!(kinds("len([1, 2, 3]) > 2").is_empty());
    assert!(kinds("dist.ReduceOp.SUM").is_empty());
    // A counter read inside its loop is the pass number: the same on every rank on the same
    // pass, whatever the loader's length (that decides how many passes, the loop's own test).
    assert!(kinds("step % 10 == 0").is_empty());
    assert_eq!(kinds("build_model()"), [Unknown]);
    assert_eq!(kinds("flag"), [Unknown]);
    assert_eq!(evidence("flag"), "`flag` (a parameter: the caller decides)");
    assert_eq!(kinds("should_stop()"), [Unknown]);
    assert_eq!(kinds("undefined_name"), [Unknown]);
    assert_eq!(evidence("undefined_name"), "`undefined_name` (not assigned in this file)");
}

#[test]
fn inside_an_except_body_adds_exception() {
    let m = Module::parse(TRAIN);
    let deps = classify_expression(&m, 22, "rank == 0");
    let kinds: Vec<_> = deps.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, [RankId, Exception]);
    assert_eq!(deps[1].evidence, "inside `except RuntimeError` at line 21");
}

#[test]
fn garbage_and_out_of_range_input_do_not_panic() {
    let m = Module::parse(TRAIN);
    assert!(classify_expression(&m, 0, "").is_empty());
    let _ = classify_expression(&m, 9999, "rank ==");
    let _ = classify_expression(&m, 5, "))) not ( valid");
    let m = Module::parse("");
    assert_eq!(classify_expression(&m, 1, "rank").len(), 1);
}

#[test]
fn cyclic_and_deep_bindings_terminate() {
    let src = "\
def f(loader):
    a = b
    b = c
    c = a + d
    d = e
    e = f
    f = loss
    for x in loader:
        a = a + 1
        y = 0  # probe
";
    let m = Module::parse(src);
    let deps = classify_expression(&m, 10, "a");
    assert_eq!(deps.len(), 1);
}
