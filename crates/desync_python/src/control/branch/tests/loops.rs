//! Loops whose trip count differs across ranks (ragged data, rank-local limits).

use super::{assert_branch, branch, branch_swapped, kinds};
use crate::{Construct, DependenceKind, Module};

#[test]
fn ragged_loader_for_loop() {
    let src = "\
from torch.utils.data import DataLoader
def train(model, dataset, opt):
    for batch in DataLoader(dataset[dist.get_rank()::4]):
        loss = model(batch)
        loss.backward()  # <A>
        opt.step()
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    let iterable = "DataLoader(dataset[dist.get_rank()::4])";
    assert_branch(&b, Construct::For, src, "for batch", iterable);
    assert_eq!(b.source, format!("for batch in {iterable}:"));
    // The length of the rank's slice of the dataset: the rank id, and the dataset's length.
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
    assert_eq!(b.dependence[0].evidence, "`dist.get_rank()`");
    assert_eq!(b.length_parameters, ["dataset"]);
    assert_eq!(b.skipped_line, Some(5));
    assert_eq!(branch_swapped(src).unwrap().construct, Construct::For);
    // B already returned from the function.
    assert_eq!(Module::parse(src).find_branch(5, None).unwrap().construct, Construct::For);
}

#[test]
fn while_on_a_rank_local_limit() {
    let src = "\
def train(shard_dir, batch_size, x):
    max_steps_local = len(os.listdir(shard_dir)) // batch_size
    step = 0
    while step < max_steps_local:
        dist.all_reduce(x)  # <A>
        step += 1
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::While, src, "while", "step < max_steps_local");
    assert_eq!(kinds(&b), [DependenceKind::Environment]);
    assert_eq!(
        b.dependence[0].evidence,
        "`max_steps_local` = `len(os.listdir(shard_dir)) // batch_size` (line 2) ← `os.listdir(shard_dir)`"
    );
}

#[test]
fn range_over_local_length_and_enumerate_counters() {
    let src = "\
def train(loader, x):
    n = len(loader)
    for i in range(n):
        dist.all_reduce(x)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::For, src, "for i", "range(n)");
    assert_eq!(kinds(&b), [DependenceKind::Unknown]);
    // `len(loader)` counts its batches: the caller decides through how many it passes.
    assert!(b.parameters.is_empty(), "{:?}", b.parameters);
    assert_eq!(b.length_parameters, ["loader"]);
}

#[test]
fn constant_loop_is_reported_without_dependence() {
    let src = "\
def f(x):
    for _ in range(3):
        dist.all_reduce(x)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::For);
    assert!(b.dependence.is_empty(), "{:?}", b.dependence);
}

#[test]
fn inner_loop_break_for_a_group_after_it() {
    let src = "\
from torch.utils.data import DataLoader
def f(ds):
    for epoch in range(10):
        for batch in DataLoader(ds):
            if dist.get_rank() == 0 and batch is None:
                break
            dist.all_reduce(batch)  # <A>
        dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Break, src, "break", "dist.get_rank() == 0 and batch is None");
    assert_eq!(kinds(&b), [DependenceKind::RankId, DependenceKind::LocalData]);
}

#[test]
fn loop_else_block() {
    let src = "\
def f(loader):
    for batch in loader:
        dist.all_reduce(batch)  # <A>
    else:
        dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::For);
    assert_eq!(b.line, 2);
}

#[test]
fn group_stuck_on_the_loop_header() {
    // A sampler or loader that issues collectives shows the `for` line in the stack.
    let src = "\
def train(loader, model):
    for batch in loader:  # <A>
        loss = model(batch)
        loss.backward()
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::For, src, "for batch", "loader");
    assert_eq!(b.skipped_line, Some(2));
    assert_eq!(branch_swapped(src).unwrap().construct, Construct::For);
    assert_eq!(Module::parse(src).find_branch(2, None).unwrap().construct, Construct::For);
}

#[test]
fn break_explains_a_group_stuck_on_the_header() {
    let src = "\
def train(loader, model):
    for batch in loader:  # <A>
        loss = model(batch)
        if not torch.isfinite(loss):
            break
        loss.backward()
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Break, src, "break", "not torch.isfinite(loss)");
}
