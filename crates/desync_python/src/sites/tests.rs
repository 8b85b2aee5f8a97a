//! Collective sites, callers, rank-only decorators, sizes and dtypes on the shapes real
//! training code has.

use super::{Collectives, SiteVia};
use crate::Module;
use crate::names::project::{FileProject, Project};
use crate::syntax::types::DependenceKind::{self, Environment, LocalData, RankId};
use crate::values::Analysis;

fn line(src: &str, marker: &str) -> u32 {
    src.lines().position(|l| l.contains(marker)).expect("marker") as u32 + 1
}

fn sites(src: &str) -> Vec<(u32, Vec<String>, String)> {
    let m = Module::parse(src);
    let cx = Analysis::default();
    Collectives::new(&cx)
        .sites(&m)
        .into_iter()
        .map(|s| {
            let via = match &s.via {
                SiteVia::Table(q) | SiteVia::Property(q) => q.clone(),
                SiteVia::Forward(w) => format!("forward {w}"),
                SiteVia::Backward(w) => format!("backward {w}"),
                SiteVia::Helper { name, .. } => format!("helper {name}"),
            };
            (s.line, s.ops, via)
        })
        .collect()
}

fn lines(src: &str) -> Vec<u32> {
    sites(src).into_iter().map(|s| s.0).collect()
}

#[test]
fn table_collectives_under_any_alias_and_keyword() {
    let src = "\
import torch.distributed as d
from torch.distributed import all_reduce as reduce_all
import deepspeed.comm as dist

def f(x, model):
    d.all_reduce(x)
    reduce_all(x)
    dist.barrier()
    dist.send(x, 1)
    model.log('a', x, sync_dist=True)
    x.all_reduce()
    print(x)
";
    let got = sites(src);
    assert_eq!(got.iter().map(|s| s.0).collect::<Vec<_>>(), [6, 7, 8, 9]);
    assert_eq!(got[2].2, "deepspeed.comm.barrier");
    assert_eq!(got[3].1, ["p2p"]);
}

#[test]
fn framework_apis_properties_and_sync_dist() {
    let src = "\
import lightning.pytorch as pl

class Model(pl.LightningModule):
    def validation_step(self, batch, idx):
        self.log('a', 1.0, sync_dist=True)  # <log>
        self.log('b', 2.0)
        self.log('c', 2.0, sync_dist=False)

    def on_fit_start(self):
        out = self.trainer.log_dir  # <dir>
        g = self.all_gather(out)  # <gather>

class Saver(pl.Callback):
    def on_validation_end(self, trainer, pl_module):
        m = trainer.callback_metrics  # <metrics>
        trainer.save_checkpoint('x')  # <save>
";
    let got = lines(src);
    let want: Vec<u32> = ["<log>", "<dir>", "<gather>", "<metrics>", "<save>"]
        .iter()
        .map(|m| line(src, m))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn helpers_are_followed_through_the_file_and_the_project() {
    let dir = std::env::temp_dir().join(format!("desync-sites-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("common.py"),
        "import torch.distributed as dist\n\ndef sync(t):\n    dist.all_reduce(t)\n    return t\n\ndef noop(t):\n    return t\n",
    )
    .unwrap();
    let main = "\
from common import sync, noop

def mean(t):
    return sync(t) / 2

def train(x):
    mean(x)
    noop(x)
";
    std::fs::write(dir.join("train.py"), main).unwrap();
    let project = FileProject::new([dir.clone()]);
    let m = Module::parse_file(main, &dir.join("train.py"));
    let cx = Analysis::new(Some(&project));
    let got = Collectives::new(&cx).sites(&m);
    assert_eq!(got.iter().map(|s| s.line).collect::<Vec<_>>(), [4, 7]);
    assert!(got[1].describe().contains("`sync`"), "{}", got[1].describe());
    assert!(got[0].describe().contains("common.py"), "{}", got[0].describe());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn wrapped_models_forward_and_backward() {
    let src = "\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.fsdp import fully_shard

def build(local_rank, net):
    return DDP(net.cuda(local_rank), device_ids=[local_rank])

def epoch(model, loader, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()  # <ddp>

def main(net, loader, probe):
    model = build(0, net)
    epoch(model, loader, torch.nn.CrossEntropyLoss())
    fully_shard(net)
    out = net(torch.ones(1))  # <fsdp>
    probe(torch.ones(1)).sum().backward()
";
    let got = sites(src);
    // `epoch(...)` is a site too: its body runs the DDP backward.
    let epoch = line(src, "    epoch(model");
    assert_eq!(
        got.iter().map(|s| s.0).collect::<Vec<_>>(),
        [line(src, "<ddp>"), epoch, line(src, "<fsdp>")]
    );
    assert_eq!(got[0].2, "backward torch.nn.parallel.DistributedDataParallel");
    assert_eq!(got[1].2, "helper epoch");
    assert_eq!(got[2].1, ["all_gather"]);
}

#[test]
fn deepspeed_engines_and_accelerate() {
    let src = "\
import deepspeed
from accelerate import Accelerator

def main(args, model):
    engine, _, loader, _ = deepspeed.initialize(args=args, model=model)
    engine.backward(engine(1))
    engine.save_checkpoint('d')
    acc = Accelerator()
    acc.wait_for_everyone()
    acc.gather(model)
    acc.print('x')
";
    assert_eq!(lines(src), [5, 6, 7, 9, 10]);
}

#[test]
fn rank_only_decorators_and_spawned_process_indexes() {
    let src = "\
import torch.multiprocessing as mp
from lightning.pytorch.utilities import rank_zero_only
from accelerate import Accelerator

accelerator = Accelerator()

@rank_zero_only
def log_dir(trainer):
    return trainer.log_dir

@accelerator.on_main_process
def save(x):
    pass

def worker(rank, world, cfg):
    pass

def helper(flag):
    pass

if __name__ == '__main__':
    mp.spawn(worker, args=(4, 'c'), nprocs=4)
    helper(True)
";
    let m = Module::parse(src);
    let cx = Analysis::default();
    let c = Collectives::new(&cx);
    let guarded: Vec<(String, u32)> =
        c.rank_only(&m).into_iter().map(|r| (r.name, r.decorator_line)).collect();
    assert_eq!(guarded, [("log_dir".to_owned(), 7), ("save".to_owned(), 11)]);
    let rank = c.arguments_for(&m, line(src, "def worker"), "rank");
    assert_eq!(rank.len(), 1);
    assert!(rank[0].process_index);
    let world = c.arguments_for(&m, line(src, "def worker"), "world");
    assert_eq!((world[0].text.as_str(), world[0].process_index), ("4", false));
    let flag = c.arguments_for(&m, line(src, "def helper"), "flag");
    assert_eq!(flag[0].text, "True");
}

fn size(src: &str, marker: &str, expr: &str) -> Vec<DependenceKind> {
    let m = Module::parse(src);
    let cx = Analysis::default();
    let f = Collectives::new(&cx).size_dependence(&m, line(src, marker), expr);
    f.dependence.iter().map(|d| d.kind).filter(|k| *k != DependenceKind::Unknown).collect()
}

const SHARDS: &str = "\
import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

def shard_batches(rank, steps, batch=16):
    fault = int(os.environ.get('FAULT', '-1'))
    for step in range(steps):
        x = torch.randn(batch, 8)
        if fault == rank:
            x = x[: batch // 2]
        yield step, x

def even_batches(steps, batch=16):
    for step in range(steps):
        yield step, torch.randn(batch, 8)

def gather(model, x):
    preds = model(x).argmax(-1).float()
    out = torch.empty(preds.numel() * 4)
    dist.all_gather_into_tensor(out, preds)  # <gather>

def main(model, val_x, labels):
    rank = dist.get_rank()
    for step, x in shard_batches(rank, 10):
        gather(model, x)
        n = len(x)  # <shard>
    for step, y in even_batches(10):
        k = y  # <even>
    shard = TensorDataset(val_x[rank::4])
    for xb in DataLoader(shard, batch_size=8):
        b = xb  # <loader>
    picked = labels[labels > 0]
    count = int((labels > 0).sum().item())
    parts = []
    for p in range(rank):
        parts.append(torch.ones(3))
    flat = torch.cat(parts)  # <end>
";

#[test]
fn sizes_follow_data_through_generators_slices_and_lists() {
    assert!(size(SHARDS, "# <shard>", "x").contains(&RankId));
    assert!(size(SHARDS, "# <shard>", "x").contains(&Environment));
    assert!(size(SHARDS, "# <even>", "y").is_empty());
    assert_eq!(size(SHARDS, "# <loader>", "xb"), [RankId]);
    assert!(size(SHARDS, "# <end>", "picked").contains(&LocalData));
    assert!(size(SHARDS, "# <end>", "torch.zeros(count)").contains(&LocalData));
    assert_eq!(size(SHARDS, "# <end>", "flat"), [RankId]);
    // Inside `gather`, `x` is the parameter: main passes the rank-resized batch.
    assert!(size(SHARDS, "# <gather>", "preds").contains(&RankId));
    assert!(size(SHARDS, "# <gather>", "torch.zeros(len(labels), 4)").is_empty());
    // A reduction over a dimension keeps the others: per-sample sums of an even batch are as
    // many on every rank, of the rank-resized batch as many as its rows; a count read from
    // the values is data-dependent, a reduction over the first dimension a feature vector.
    assert!(size(SHARDS, "# <even>", "(y * (y > 0)).sum(-1)").is_empty());
    assert!(size(SHARDS, "# <even>", "y.max(dim=1)").is_empty());
    assert!(size(SHARDS, "# <shard>", "x.sum(-1)").contains(&RankId));
    assert!(size(SHARDS, "# <end>", "picked.sum(1)").contains(&LocalData));
    assert!(size(SHARDS, "# <end>", "torch.zeros(int(labels.sum(-1).max()))").contains(&LocalData));
    assert!(size(SHARDS, "# <shard>", "x.sum(0)").is_empty());
}

#[test]
fn dtypes_chosen_per_rank() {
    let src = "\
import os
import torch
import torch.distributed as dist

COMM = {'fp32': torch.float32, 'bf16': torch.bfloat16}

def reduce(grads, comm_dtype, device):
    flat = torch.cat(grads).to(comm_dtype)
    dist.all_reduce(flat.to(device))  # <reduce>

def main(grads, args, step):
    comm = COMM[os.environ.get('DTYPE', 'fp32')]
    reduce(grads, torch.float32 if step < args.warmup else comm, 'cuda')
    x = torch.ones(2, dtype=torch.bfloat16 if dist.get_rank() else torch.float32)
    y = torch.ones(2).half()  # <local>
";
    let m = Module::parse(src);
    let cx = Analysis::default();
    let c = Collectives::new(&cx);
    let kinds = |marker: &str, e: &str| -> Vec<DependenceKind> {
        c.dtype_dependence(&m, line(src, marker), e).dependence.iter().map(|d| d.kind).collect()
    };
    assert_eq!(kinds("# <reduce>", "flat.to(device)"), [Environment]);
    assert_eq!(kinds("# <local>", "x"), [RankId]);
    assert!(kinds("# <local>", "y").is_empty());
}

const FROM_DATA: &str = "\
import torch
import torch.distributed as dist

def owned(rank):
    return list(range(rank + 1))

def main(start, end):
    rank = dist.get_rank()
    bounds = torch.tensor([start * rank, end * rank, 3])  # <listed>
    scaled = torch.ones(1024).mul_(float(rank)).view(-1)  # <scaled>
    ids = torch.tensor(owned(rank))  # <owned>
    buf = torch.empty(4 * end)
    slot = buf.narrow(0, end * rank, end)  # <slot>
    tail = buf.narrow(0, 0, end * rank)  # <tail>
";

#[test]
fn tensors_made_from_listed_values_have_as_many_elements_as_listed() {
    assert!(size(FROM_DATA, "# <listed>", "bounds").is_empty(), "three values on every rank");
    assert!(size(FROM_DATA, "# <scaled>", "scaled").is_empty(), "mul_ scales, it does not resize");
    assert!(size(FROM_DATA, "# <owned>", "ids").contains(&RankId), "rank + 1 ids on rank r");
}

#[test]
fn a_narrowed_tensor_is_as_long_as_asked_wherever_it_starts() {
    assert!(size(FROM_DATA, "# <slot>", "slot").is_empty(), "each rank's slot, `end` long");
    assert!(size(FROM_DATA, "# <tail>", "tail").contains(&RankId), "`end * rank` long");
}

#[test]
fn evidence_through_a_call_quotes_what_the_call_passes() {
    let m = Module::parse(FROM_DATA);
    let cx = Analysis::default();
    let f = Collectives::new(&cx).size_dependence(&m, line(FROM_DATA, "# <owned>"), "ids");
    let evidence: Vec<&str> = f.dependence.iter().map(|d| d.evidence.as_str()).collect();
    assert!(evidence.iter().any(|e| e.contains("`dist.get_rank()`")), "{evidence:?}");
    assert!(evidence.iter().all(|e| !e.contains("``")), "an empty quote: {evidence:?}");
}

const STRUCTURE: &str = "\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

def first_dim(tensors):
    if isinstance(tensors, (list, tuple)):
        for t in tensors:
            found = first_dim(t)
            if found is not None:
                return found
    elif isinstance(tensors, torch.Tensor):
        return tensors.shape[0] if len(tensors.shape) >= 1 else None

def keep_rows(x, n):
    return x[:n]

def evaluate(model, dataset, width):
    rank = dist.get_rank()
    world = dist.get_world_size()
    batch_size = None
    for batch in DataLoader(dataset, batch_size=8):
        observed = first_dim(batch)
        if batch_size is None:
            batch_size = observed
        losses = model(batch)
        kept = keep_rows(losses, width)
        cut = keep_rows(losses, int((losses > 0).sum()))
        rows = torch.tensor(sorted(batch.tolist()))
        parts = []
        for i in range(world):
            if i == rank:
                parts.append(losses)
            else:
                parts.append(torch.zeros_like(losses))
        mine = []
        for i in range(world):
            if i == rank:
                mine.append(losses)
        end = batch  # <end>
";

#[test]
fn a_helper_returning_its_argument_s_size_gives_that_size_not_its_values() {
    // `first_dim(batch)` is the batch size: its test reads the tensor's structure only.
    assert!(size(STRUCTURE, "# <end>", "losses.repeat(batch_size)").is_empty());
    assert!(size(STRUCTURE, "# <end>", "torch.zeros(observed)").is_empty());
    // `x[:n]` of a helper: the size passed as `n`, by value.
    assert!(size(STRUCTURE, "# <end>", "kept").is_empty());
    assert!(size(STRUCTURE, "# <end>", "cut").contains(&LocalData));
    // `x.tolist()` as data has one item per row of `x`.
    assert!(size(STRUCTURE, "# <end>", "rows").is_empty());
}

#[test]
fn a_list_grown_in_every_clause_of_a_rank_test_has_one_item_either_way() {
    assert!(size(STRUCTURE, "# <end>", "torch.cat(parts)").is_empty());
    assert_eq!(size(STRUCTURE, "# <end>", "torch.cat(mine)"), [RankId]);
}

/// A helper whose every collective names one of its parameters as the process group issues
/// them on what the call passes for it; a helper that uses several groups names none.
#[test]
fn a_helper_call_names_the_group_it_passes() {
    let src = "\
import torch.distributed as dist

def sync(x, group):
    dist.all_reduce(x, group=group)
    dist.barrier(group=group)

def mixed(x, dp_group, tp_group):
    dist.all_reduce(x, group=dp_group)
    dist.all_reduce(x, group=tp_group)

class Stage:
    def share(self, x, pg=None):
        sync(x, pg)

def main(x, tp_group, dp_group, stage):
    sync(x, tp_group)  # <a>
    sync(x, group=dp_group)  # <b>
    mixed(x, dp_group, tp_group)  # <c>
    Stage().share(x, pg=tp_group)  # <d>
    sync(x, None)  # <e>
";
    let m = Module::parse(src);
    let cx = Analysis::default();
    let group_at = |marker: &str| {
        let at = line(src, marker);
        Collectives::new(&cx).sites(&m).into_iter().find(|s| s.line == at).and_then(|s| s.group)
    };
    assert_eq!(group_at("# <a>").as_deref(), Some("tp_group"));
    assert_eq!(group_at("# <b>").as_deref(), Some("dp_group"));
    assert_eq!(group_at("# <c>"), None);
    assert_eq!(group_at("# <d>").as_deref(), Some("tp_group"));
    assert_eq!(group_at("# <e>"), None, "None is the world group");
}

#[test]
fn a_method_called_under_tests_of_its_object_issues_only_the_branches_they_allow() {
    let src = "\
import torch.distributed as dist

class Saver:
    def save(self, state):
        if self.pp_size == 1:
            return state
        elif self.mode is None:
            dist.barrier()
        else:
            dist.all_gather_object([None], state)

    def flat(self, state):
        if self.pp_size == 1 and not self.async_io:
            self.save(state)

    def staged(self, state):
        if self.pp_size != 1:
            pass
        elif self.verbose or self.mode:
            self.save(state)
        else:
            self.save(state)

    def piped(self, state):
        if self.pp_size > 1:
            self.save(state)

    def moved(self, state):
        if self.pp_size == 1:
            self.pp_size = 2
            self.save(state)
";
    let got = sites(src);
    let lines: Vec<u32> = got.iter().map(|s| s.0).collect();
    // `pp_size == 1` (in an `and`) rules out both branches that issue: no site.
    let flat_call = line(src, "if self.pp_size == 1 and not self.async_io:") + 1;
    assert!(!lines.contains(&flat_call), "{got:?}");
    // An `elif`/`else` knows the earlier tests failed: `pp_size == 1` again; an `or` says
    // nothing.
    let staged_first = line(src, "elif self.verbose or self.mode:") + 1;
    assert!(!lines.contains(&staged_first) && !lines.contains(&(staged_first + 2)), "{got:?}");
    // An order test is no fact; a field the caller assigns is none either.
    let piped = line(src, "if self.pp_size > 1:") + 1;
    let moved = line(src, "self.pp_size = 2") + 1;
    for call in [piped, moved] {
        let site = got.iter().find(|s| s.0 == call).unwrap_or_else(|| panic!("{call} in {got:?}"));
        assert_eq!(site.1, ["barrier", "all_gather"]);
    }
}

#[test]
fn facts_follow_the_arguments_into_the_callee_and_its_calls() {
    let src = "\
import torch.distributed as dist

def gather(x, use_zero):
    if use_zero:
        dist.all_gather([x], x)

def shard(xs, use_zero):
    for x in xs:
        gather(x, use_zero=use_zero)

def save(xs, zero):
    if not zero:
        shard(xs, zero)  # under
    shard(xs, zero)  # always

def renamed(xs, zero):
    if not zero:
        zero = True
        shard(xs, zero)  # assigned

def rebound(xs, zero):
    if not zero:
        for zero, _ in xs:
            pass
        shard(xs, zero)  # rebound
";
    let got = lines(src);
    // Under `not zero` (a parameter, passed on by position, then by keyword) nothing is
    // issued; unconditionally it is; a parameter the caller assigns is no fact.
    assert!(!got.contains(&line(src, "# under")), "{got:?}");
    assert!(got.contains(&line(src, "# always")), "{got:?}");
    assert!(got.contains(&line(src, "# assigned")), "{got:?}");
    assert!(got.contains(&line(src, "# rebound")), "{got:?}");
}

/// A helper whose walk met only itself again (a recursive tree walk, or two helpers of one
/// module calling each other) is summarised once for the whole project; one whose walk met a
/// function that was already being summarised when it began (the linted file's own `step`,
/// reached again through the helper) is not shared: what that cut hid depends on where the
/// walk started.
#[test]
fn summaries_cut_only_by_their_own_recursion_are_shared() {
    let dir = std::env::temp_dir().join(format!("desync-memo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("helpers.py"),
        "\
import torch.distributed as dist

def flatten(tree, out):
    for child in tree.children:
        flatten(child, out)
    dist.all_reduce(out)

def ping(x):
    pong(x)

def pong(x):
    ping(x)
    dist.barrier()

def calls_back(x):
    from loop import step
    step(x)
",
    )
    .unwrap();
    let main = "\
from helpers import flatten, ping, calls_back

def step(x):
    flatten(x, x)
    ping(x)
    calls_back(x)
";
    std::fs::write(dir.join("loop.py"), main).unwrap();
    let project = FileProject::new([dir.clone()]);
    let m = Module::parse_file(main, &dir.join("loop.py"));
    let cx = Analysis::new(Some(&project));
    let got = Collectives::new(&cx).sites(&m);
    assert_eq!(got.iter().map(|s| s.line).collect::<Vec<_>>(), [4, 5, 6]);
    let memo = project.helper_memo().unwrap().get::<super::HelperMemo>().unwrap().summarised();
    // `step` (as `calls_back` reached it) met `calls_back` again, which was in progress
    // before `step`'s walk began: not shared. `calls_back` met only what it called.
    assert_eq!(memo, ["calls_back", "flatten", "ping"], "{memo:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Names bound by one import statement each resolve to their own target, however often they
/// are called (what an import statement binds is remembered per statement and name).
#[test]
fn every_name_of_one_import_statement_resolves_to_its_own_target() {
    let src = "\
from torch.distributed import all_reduce, barrier, broadcast as send_weights

def step(x):
    barrier()
    all_reduce(x)
    send_weights(x, 0)
    all_reduce(x)
    barrier()
";
    let got: Vec<String> = sites(src).into_iter().map(|s| s.2).collect();
    assert_eq!(
        got,
        [
            "torch.distributed.barrier",
            "torch.distributed.all_reduce",
            "torch.distributed.broadcast",
            "torch.distributed.all_reduce",
            "torch.distributed.barrier",
        ]
    );
}

#[test]
fn a_state_dict_passed_in_decides_the_callees_none_test() {
    // The converter gathers only when it is given no state dict. Passing what a helper
    // returns from `get_model_state_dict` (a dict, never `None`) rules that branch out for
    // the call; passing what a decorated helper returns does not: the decorator may return
    // something else (`@rank_zero_only` gives `None` on every rank but 0).
    let src = "\
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import get_model_state_dict

def unknown_decorator(fn):
    return fn

def convert(model, out, state_dict=None):
    if state_dict is None:
        state_dict = get_model_state_dict(model)
    save(out, state_dict)

def save(out, sd):
    pass

def gathered(model):
    return get_model_state_dict(model)

@unknown_decorator
def decorated(model):
    return get_model_state_dict(model)

def export(model, out):
    sd = gathered(model)
    other = decorated(model)
    if dist.get_rank() == 0:
        convert(model, out, state_dict=sd)  # given
        convert(model, out, state_dict=other)  # decorated
        convert(model, out)  # none
";
    let got = lines(src);
    assert!(!got.contains(&line(src, "# given")), "{got:?}");
    assert!(got.contains(&line(src, "# decorated")), "{got:?}");
    assert!(got.contains(&line(src, "# none")), "{got:?}");
}
