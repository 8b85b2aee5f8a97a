//! Guarded `continue`/`break`/`return`/`raise` that make some ranks skip a collective.

use super::{assert_branch, branch, kinds, line};
use crate::{Construct, DependenceKind, Module};

const SKIP_NON_FINITE: &str = "\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
def train(model, ds, opt):
    for batch in DataLoader(ds):
        dist.all_reduce(torch.ones(1))  # <B>
        batch = batch.cuda()
        loss = model(batch)
        if not torch.isfinite(loss):
            continue
        loss.backward()  # <A>
        opt.step()
";

#[test]
fn continue_on_non_finite_loss() {
    let src = SKIP_NON_FINITE;
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Continue, src, "continue", "not torch.isfinite(loss)");
    assert_eq!(b.condition_line, Some(line(src, "if not")));
    assert_eq!(b.skipped_line, Some(line(src, "# <A>")));
    assert_eq!(b.source, "continue");
    assert_eq!(b.function.as_deref(), Some("train"));
    assert_eq!(kinds(&b), [DependenceKind::LocalData]);
    let evidence = &b.dependence[0].evidence;
    assert!(evidence.starts_with("`loss` = `model(batch)` (line 8) ← `batch`"), "{evidence}");
    assert!(evidence.ends_with("each rank iterates its own data)"), "{evidence}");
}

#[test]
fn continue_found_whichever_group_is_a() {
    let src = SKIP_NON_FINITE;
    let m = Module::parse(src);
    let b = m.find_branch(line(src, "# <B>"), Some(line(src, "# <A>"))).unwrap();
    assert_eq!(b.construct, Construct::Continue);
    assert_eq!(b.skipped_line, Some(line(src, "# <A>")));
    // Shifted streams: both groups at the same line, one iteration apart.
    let b = m.find_branch(line(src, "# <A>"), Some(line(src, "# <A>"))).unwrap();
    assert_eq!(b.construct, Construct::Continue);
    // The other group is not in this function at all.
    let b = m.find_branch(line(src, "# <A>"), None).unwrap();
    assert_eq!(b.construct, Construct::Continue);
}

#[test]
fn one_line_guard_and_nearest_jump_wins() {
    let src = "\
from torch.utils.data import DataLoader
def train(ds, max_norm):
    for batch in DataLoader(ds):
        dist.broadcast(batch, 0)  # <B>
        if batch is None: continue
        loss = compute_loss(batch)
        grad_norm = clip_grad_norm(loss)
        if grad_norm > max_norm: continue
        dist.all_reduce(loss)  # <A>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::Continue);
    assert_eq!(b.line, 8);
    assert_eq!(b.source, "if grad_norm > max_norm: continue");
    assert_eq!(b.condition.as_deref(), Some("grad_norm > max_norm"));
    assert_eq!(b.condition_line, Some(8));
    assert_eq!(kinds(&b), [DependenceKind::LocalData]);
}

#[test]
fn break_with_other_group_after_the_loop() {
    let src = "\
from torch.utils.data import DataLoader
def train(model, ds, threshold):
    for batch in DataLoader(ds):
        loss = model(batch)
        if loss.item() > threshold:
            break
        dist.all_reduce(loss)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Break, src, "break", "loss.item() > threshold");
    assert_eq!(kinds(&b), [DependenceKind::LocalData]);
}

#[test]
fn early_stopping_break_after_the_collective() {
    let src = "\
from torch.utils.data import DataLoader
def fit(model, epochs, x, val_ds):
    best = float('inf')
    for epoch in range(epochs):
        dist.all_reduce(x)  # <A>
        val_loss = evaluate(model, DataLoader(val_ds))
        if val_loss > best:
            break
        best = val_loss
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Break, src, "break", "val_loss > best");
    assert_eq!(b.skipped_line, Some(5));
    assert_eq!(kinds(&b), [DependenceKind::LocalData]);
}

#[test]
fn break_does_not_explain_a_group_still_in_the_loop() {
    let src = "\
def f(loader, stop):
    for batch in loader:
        dist.broadcast(batch, 0)  # <B>
        if stop:
            break
        dist.all_reduce(batch)  # <A>
";
    assert_eq!(branch(src), None);
}

#[test]
fn return_when_the_other_group_left_the_function() {
    let src = "\
def train_step(model, batch, opt):
    loss = model(batch)
    if torch.isnan(loss).any():
        return None
    loss.backward()  # <A>
    opt.step()
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Return, src, "return", "torch.isnan(loss).any()");
    // The batch is a parameter: only the caller's frame can say what it is.
    assert_eq!(kinds(&b), [DependenceKind::Unknown]);
    assert_eq!(b.parameters, ["model", "batch"]);
}

#[test]
fn raise_on_rank_local_norm() {
    let src = "\
def step(model, opt):
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if norm > 1e6:
        raise RuntimeError('diverged')
    dist.all_reduce(norm)  # <A>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Raise, src, "raise", "norm > 1e6");
    // Under DDP the gradients are already averaged: nothing here shows the norm differs.
    assert_eq!(kinds(&b), [DependenceKind::Unknown]);
    assert_eq!(b.parameters, ["model"]);
}

#[test]
fn time_budget_break() {
    let src = "\
def train(loader, budget):
    start = time.time()
    for batch in loader:
        dist.all_reduce(batch)  # <A>
        if time.time() - start > budget:
            break
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Break, src, "break", "time.time() - start > budget");
    assert_eq!(b.dependence[0].kind, DependenceKind::Time);
}

#[test]
fn unguarded_jumps_and_nested_functions_do_not_count() {
    let src = "\
def f(xs):
    def cb():
        if flaky():
            return
    for x in xs:
        dist.broadcast(x, 0)  # <B>
        for y in x:
            if y:
                continue
        dist.all_reduce(x)  # <A>
";
    assert_eq!(branch(src), None);
}

#[test]
fn jump_inside_informative_guard_beats_opaque_if() {
    let src = "\
def train(ds, ddp):
    for batch in torch.utils.data.DataLoader(ds):
        dist.broadcast(batch, 0)  # <B>
        loss = model(batch)
        if not torch.isfinite(loss):
            continue
        if ddp:
            dist.all_reduce(loss)  # <A>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::Continue);
}

#[test]
fn jump_inside_an_except_handler_adds_exception() {
    let src = "\
def train(loader, rank):
    for batch in loader:
        dist.broadcast(batch, 0)  # <B>
        try:
            out = model(batch)
        except ValueError:
            if dist.get_rank() == 0:
                continue
        dist.all_reduce(out)  # <A>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::Continue);
    assert_eq!(kinds(&b), [DependenceKind::RankId, DependenceKind::Exception]);
    assert_eq!(b.dependence[1].evidence, "inside `except ValueError` at line 6");
}
