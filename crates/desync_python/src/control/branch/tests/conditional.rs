//! `if`/`elif`/`else` and `with suppress(...)` between the groups.

use super::{assert_branch, branch, branch_swapped, kinds, line};
use crate::{Construct, DependenceKind, Module};

const RANK_ZERO_LOGGING: &str = "\
import torch
import torch.distributed as dist
rank = dist.get_rank()
def train(model, loader, opt):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        opt.step()
        if rank == 0:
            dist.all_reduce(loss.detach())  # <A>
        dist.barrier()  # <B>
";

#[test]
fn extra_collective_under_rank_condition() {
    let src = RANK_ZERO_LOGGING;
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "if rank == 0", "rank == 0");
    assert_eq!(b.condition_line, Some(9));
    assert_eq!(b.function.as_deref(), Some("train"));
    assert_eq!(b.source, "if rank == 0:");
    assert_eq!(b.skipped_line, Some(line(src, "# <A>")));
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
    assert_eq!(b.dependence[0].evidence, "`rank` = `dist.get_rank()` (line 3) ← `dist.get_rank()`");
    // Same answer whichever group is called A, and when B left the function.
    assert_eq!(branch_swapped(src).unwrap().line, 9);
    let m = Module::parse(src);
    assert_eq!(m.find_branch(10, None).unwrap().line, 9);
}

#[test]
fn elif_on_get_rank() {
    let src = "\
import torch.distributed as dist
def train_step(model, batch, step, x):
    if step % 100 == 0:
        save(model)
    elif dist.get_rank() == 0:
        dist.all_reduce(x)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Elif, src, "elif", "dist.get_rank() == 0");
    assert_eq!(b.dependence[0].kind, DependenceKind::RankId);
    assert_eq!(b.dependence[0].evidence, "`dist.get_rank()`");
}

#[test]
fn different_branches_of_one_if() {
    let src = "\
def exchange(a, out):
    if torch.distributed.get_rank() % 2 == 0:
        dist.all_reduce(a)  # <A>
    else:
        dist.all_gather_into_tensor(out, a)  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "if torch", "torch.distributed.get_rank() % 2 == 0");
    assert_eq!(b.skipped_line, None);
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
    assert_eq!(branch_swapped(src).unwrap().line, 2);
}

#[test]
fn else_and_elif_blocks_pick_the_first_deciding_test() {
    let src = "\
from accelerate import PartialState
from torch.utils.data import DataLoader
def f(x, ds):
    loss = next(iter(DataLoader(ds))).sum()
    if PartialState().is_main_process:
        dist.broadcast(x, 0)
    elif loss.item() > 3:
        dist.all_reduce(x)  # <A>
    else:
        dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::Elif, src, "elif", "loss.item() > 3");
    assert_eq!(kinds(&b), [DependenceKind::LocalData]);
    let m = Module::parse(src);
    let b = m.find_branch(6, Some(10)).unwrap();
    assert_branch(&b, Construct::If, src, "if PartialState", "PartialState().is_main_process");
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
}

#[test]
fn an_agreed_flag_is_still_the_branch_but_depends_on_nothing() {
    // The all_reduce(MIN) makes the flag identical everywhere: the `if` is still where the
    // paths part, and the analysis says the decision is agreed.
    let src = "\
import torch.distributed as dist
def step(loss, grad):
    flag = torch.tensor([float(torch.isfinite(loss))])
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    if flag.item() > 0:
        dist.all_reduce(grad)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "if flag", "flag.item() > 0");
    assert!(b.dependence.is_empty(), "{:?}", b.dependence);
    assert!(b.agreed[0].contains("dist.all_reduce(flag"), "{:?}", b.agreed);
}

#[test]
fn rank_condition_beats_an_earlier_unrelated_continue() {
    let src = "\
def train(loader, rank):
    for batch in loader:
        dist.broadcast(batch, 0)
        loss = model(batch)
        if not torch.isfinite(loss):
            continue
        if rank == 0:
            dist.all_reduce(loss)  # <A>
        dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "if rank", "rank == 0");
}

#[test]
fn nested_ifs_prefer_the_informative_inner_condition() {
    let src = "\
def train(loader, log_every):
    for step, batch in enumerate(loader):
        if step % 10 == 0:
            if int(os.environ[\"LOCAL_RANK\"]) == 0:
                dist.all_reduce(batch)  # <A>
        dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "LOCAL_RANK", "int(os.environ[\"LOCAL_RANK\"]) == 0");
    assert_eq!(kinds(&b), [DependenceKind::RankId]);
}

#[test]
fn condition_kinds_time_randomness_environment() {
    let cases = [
        ("random.random() < 0.1", DependenceKind::Randomness),
        ("time.perf_counter() - t0 > budget", DependenceKind::Time),
        ("os.path.exists(ckpt_path)", DependenceKind::Environment),
        ("socket.gethostname().startswith('gpu')", DependenceKind::Environment),
        ("torch.rand(1).item() < p", DependenceKind::Randomness),
    ];
    for (cond, kind) in cases {
        let src = format!(
            "def f(x):\n    if {cond}:\n        dist.all_reduce(x)  # <A>\n    dist.barrier()  # <B>\n"
        );
        let b = branch(&src).unwrap();
        assert_eq!(b.construct, Construct::If);
        assert_eq!(b.condition.as_deref(), Some(cond));
        assert_eq!(b.dependence[0].kind, kind, "{cond}: {:?}", b.dependence);
    }
}

#[test]
fn opaque_condition_is_unknown() {
    let src = "\
def f(x, use_fast_path):
    if use_fast_path:
        dist.all_reduce(x)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_eq!(b.construct, Construct::If);
    assert_eq!(kinds(&b), [DependenceKind::Unknown]);
    assert_eq!(b.dependence[0].evidence, "`use_fast_path` (a parameter: the caller decides)");
    assert_eq!(b.parameters, ["use_fast_path"]);
}

#[test]
fn a_context_manager_chosen_by_a_local_test_decides_what_the_body_issues() {
    // DDP gradient accumulation by a rank-local token budget: the rank that reached it runs
    // backward outside `no_sync()` (the gradient all_reduce) while its peers accumulate and go
    // on to the next micro-batch's collective.
    let src = "\
import torch.distributed as dist
from contextlib import nullcontext
from torch.utils.data import DataLoader
def train(model, shard, budget):
    seen = 0
    for tokens, mask in DataLoader(shard, batch_size=8):
        seen += int(mask.sum())
        sync_now = seen >= budget
        with nullcontext() if sync_now else model.no_sync():
            loss = count_and_loss(model, tokens)  # <B>
            loss.backward()  # <A>
        if sync_now:
            seen = 0
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::With, src, "with nullcontext()", "sync_now");
    assert_eq!(kinds(&b), [DependenceKind::LocalData]);
    assert_eq!(branch_swapped(src).unwrap().line, line(src, "with nullcontext()"));
    // A plain `with` around both lines decides nothing.
    let plain = src.replace("nullcontext() if sync_now else model.no_sync()", "torch.no_grad()");
    assert!(branch(&plain).is_none_or(|b| b.construct != Construct::With));
}

#[test]
fn with_suppress_swallows_the_collective() {
    let src = "\
def f(x):
    with contextlib.suppress(RuntimeError):
        dist.all_reduce(x)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::With, src, "with", "contextlib.suppress(RuntimeError)");
    assert_eq!(kinds(&b), [DependenceKind::Exception]);
}

#[test]
fn plain_with_is_transparent() {
    let src = "\
def f(x, rank):
    if rank == 0:
        with torch.no_grad():
            dist.all_reduce(x)  # <A>
    dist.barrier()  # <B>
";
    let b = branch(src).unwrap();
    assert_branch(&b, Construct::If, src, "if rank", "rank == 0");
}
