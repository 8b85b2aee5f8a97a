//! The data-flow dependence analysis on the shapes real training code has.
//!
//! Length: tests only, one small Python sample per mechanism; they read alike and are found by
//! name, so they stay in one file.

use super::{Analysis, Finding};
use crate::Module;
use crate::names::project::FileProject;
use crate::syntax::types::DependenceKind::{
    self, Environment, Exception, LocalData, Randomness, RankId, Time, Unknown,
};

fn line(src: &str, marker: &str) -> u32 {
    src.lines().position(|l| l.contains(marker)).expect("marker") as u32 + 1
}

fn at(src: &str, marker: &str, expr: &str) -> Finding {
    let m = Module::parse(src);
    Analysis::default().dependence(&m, line(src, marker), expr)
}

fn kinds(f: &Finding) -> Vec<DependenceKind> {
    f.dependence.iter().map(|d| d.kind).collect()
}

const TRAINER: &str = "\
import argparse
import os
import time
import torch
import torch.distributed as dist

PATIENCE = 2

def setup():
    dist.init_process_group('gloo')
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234 + rank)
    return rank, world

def shard_batches(rank, world, steps, batch=16):
    g = torch.Generator().manual_seed(99 + rank)
    for step in range(steps):
        x = torch.randn(batch, 8, generator=g)
        yield step, x

def any_rank(flag):
    t = torch.tensor([int(flag)])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())

def main():
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    rank, world = setup()
    best, bad_epochs = float('inf'), 0
    started = time.time()
    for step, x in shard_batches(rank, world, steps=60):
        val = float(x.sum())
        if val < best:
            best = val
        else:
            bad_epochs += 1
        stop = bad_epochs >= PATIENCE  # <use>
        agreed = any_rank(stop)
        late = time.time() - started > args.budget
        host = os.environ.get('NODE_FLAVOR', 'a') == 'b'
        local = int(os.environ['LOCAL_RANK'])
        size = int(os.environ['WORLD_SIZE'])
";

#[test]
fn tuple_returns_keep_their_elements_apart() {
    assert_eq!(kinds(&at(TRAINER, "# <use>", "rank")), [RankId]);
    let world = at(TRAINER, "# <use>", "world");
    assert!(world.dependence.is_empty() && world.complete, "{world:?}");
    let rank = at(TRAINER, "# <use>", "rank == 0");
    assert!(rank.dependence[0].evidence.contains("dist.get_rank()"), "{rank:?}");
}

#[test]
fn a_counter_over_a_generator_depends_on_its_length_not_its_items() {
    // shard_batches yields `steps` items on every rank: the step counter agrees...
    let step = at(TRAINER, "# <use>", "step % 4 == 3");
    assert!(step.dependence.is_empty(), "{step:?}");
    // ...while the items come from a generator seeded by the rank.
    let x = at(TRAINER, "# <use>", "x");
    assert_eq!(kinds(&x), [RankId, Randomness], "{x:?}");
    let length = Analysis::default().length_dependence(
        &Module::parse(TRAINER),
        line(TRAINER, "# <use>"),
        "shard_batches(rank, world, steps=60)",
    );
    assert!(length.dependence.is_empty() && length.complete, "{length:?}");
}

#[test]
fn an_update_under_a_condition_depends_on_the_condition() {
    let f = at(TRAINER, "# <use>", "bad_epochs >= PATIENCE");
    assert!(kinds(&f).contains(&RankId), "{f:?}");
    let evidence = &f.dependence[0].evidence;
    assert!(evidence.contains("bad_epochs"), "{evidence}");
    assert!(evidence.contains("val < best"), "{evidence}");
}

#[test]
fn consensus_through_a_helper_agrees_the_value() {
    let f = at(TRAINER, "x = torch.randn", "t.item()");
    // Inside the helper before the collective nothing is known; after it, agreed.
    let m = Module::parse(TRAINER);
    let after = Analysis::default().dependence(&m, line(TRAINER, "return bool(t.item())"), "t");
    assert!(after.dependence.is_empty(), "{after:?}");
    assert!(!after.agreed.is_empty());
    let _ = f;
    let agreed = at(TRAINER, "late =", "agreed");
    assert!(agreed.dependence.is_empty(), "{agreed:?}");
}

#[test]
fn clocks_hosts_and_launcher_variables() {
    assert_eq!(kinds(&at(TRAINER, "host =", "time.time() - started")), [Time]);
    let late = at(TRAINER, "host =", "late");
    assert_eq!(kinds(&late), [Time]);
    assert_eq!(late.configuration.len(), 1, "args.budget is configuration: {late:?}");
    assert_eq!(kinds(&at(TRAINER, "size =", "host")), [Environment]);
    assert_eq!(kinds(&at(TRAINER, "size =", "local")), [RankId]);
    let size = at(TRAINER, "size =", "int(os.environ['WORLD_SIZE'])");
    assert!(size.dependence.is_empty(), "{size:?}");
}

#[test]
fn parameters_are_left_to_the_caller() {
    let src = "def f(flag, items):\n    n = len(items)\n    return flag and n\n";
    let f = at(src, "return", "flag and n");
    assert_eq!(kinds(&f), [Unknown]);
    assert_eq!(f.parameters, ["flag"]);
    assert_eq!(f.length_parameters, ["items"], "`len(items)` is decided by how many it holds");
    assert!(!f.complete);
}

#[test]
fn exceptions() {
    let src = "\
def step(batch):
    try:
        loss = run(batch)
    except RuntimeError as e:
        skipped = 1
        return
";
    let f = at(src, "skipped", "1");
    assert_eq!(kinds(&f), [Exception]);
}

const LIGHTNING: &str = "\
import lightning.pytorch as pl
import torch

class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.threshold = 0.5

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        if loss > self.threshold:  # <train>
            pass
        return loss

    def on_validation_epoch_end(self):
        if self.trainer.is_global_zero:  # <hook>
            self.all_gather(torch.ones(1))
        if self.global_rank == 0 and self.current_epoch > 1:
            pass

class Saver(pl.Callback):
    def on_validation_end(self, trainer, pl_module):
        if trainer.is_global_zero:  # <cb>
            trainer.save_checkpoint('x.ckpt')
";

#[test]
fn lightning_rank_guards_and_batches_resolve_through_the_table() {
    let hook = at(LIGHTNING, "# <hook>", "self.trainer.is_global_zero");
    assert_eq!(kinds(&hook), [RankId], "{hook:?}");
    let cb = at(LIGHTNING, "# <cb>", "trainer.is_global_zero");
    assert_eq!(kinds(&cb), [RankId], "{cb:?}");
    let own = at(LIGHTNING, "if self.global_rank", "self.global_rank == 0");
    assert_eq!(kinds(&own), [RankId]);
    let epoch = at(LIGHTNING, "if self.global_rank", "self.current_epoch > 1");
    assert!(epoch.dependence.is_empty(), "{epoch:?}");
    let loss = at(LIGHTNING, "# <train>", "loss > self.threshold");
    assert_eq!(kinds(&loss), [LocalData], "{loss:?}");
    let m = Module::parse(LIGHTNING);
    let q = Analysis::default().qualified_name(
        &m,
        line(LIGHTNING, "# <cb>") + 1,
        "trainer.save_checkpoint",
    );
    assert_eq!(q.as_deref(), Some("lightning.pytorch.Trainer.save_checkpoint"));
}

#[test]
fn accelerate_and_data_loaders() {
    let src = "\
from accelerate import Accelerator
from torch.utils.data import DataLoader, DistributedSampler

accelerator = Accelerator()

def train(ds, n):
    loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
    shard = DataLoader(ds[:n], batch_size=8)
    for i, batch in enumerate(loader):
        y = batch.sum()  # <use>
    if accelerator.is_main_process:
        pass
";
    assert_eq!(kinds(&at(src, "if accelerator", "accelerator.is_main_process")), [RankId]);
    let y = at(src, "# <use>", "y");
    assert_eq!(kinds(&y), [LocalData], "{y:?}");
    let i = at(src, "# <use>", "i");
    assert!(i.dependence.is_empty() && i.complete, "a DistributedSampler evens lengths: {i:?}");
    let m = Module::parse(src);
    let length = Analysis::default().length_dependence(&m, line(src, "# <use>"), "shard");
    assert_eq!(length.length_parameters, ["ds"], "{length:?}");
}

#[test]
fn imports_are_followed_into_the_project() {
    let dir = tempfile_dir();
    std::fs::write(dir.join("common.py"), "import torch.distributed as dist\n\ndef node_wants(rank):\n    return rank // 2 == 1\n\ndef setup():\n    return dist.get_rank(), dist.get_world_size()\n").unwrap();
    let main = "from common import node_wants, setup\n\ndef main():\n    rank, world = setup()\n    if node_wants(rank):\n        pass\n";
    std::fs::write(dir.join("train.py"), main).unwrap();
    let project = FileProject::new([dir.clone()]);
    let m = Module::parse_file(main, &dir.join("train.py"));
    let cx = Analysis::new(Some(&project));
    let f = cx.dependence(&m, 5, "node_wants(rank)");
    assert_eq!(kinds(&f), [RankId], "{f:?}");
    assert!(f.dependence[0].evidence.contains("dist.get_rank()"), "{f:?}");
    // Without the project, the helper is opaque.
    let alone = Analysis::default().dependence(&m, 5, "node_wants(rank)");
    assert!(!alone.is_shown(), "{alone:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn names_a_package_re_exports_are_followed_to_their_definitions() {
    let dir = tempfile_dir().join("reexport");
    std::fs::create_dir_all(dir.join("pkg/utils")).unwrap();
    std::fs::write(dir.join("pkg/__init__.py"), "").unwrap();
    // `pkg.utils` re-exports a helper from its own file, and a library function too.
    std::fs::write(
        dir.join("pkg/utils/__init__.py"),
        "from .ranks import local_rank as node_local_rank\nfrom torch.distributed import get_world_size\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pkg/utils/ranks.py"),
        "import os\n\ndef _var(name, default):\n    if name in os.environ:\n        return int(os.environ[name])\n    return default\n\ndef local_rank():\n    return _var('LOCAL_RANK', 0)\n\ndef cache_size():\n    return _var(name='CACHE_SIZE', default=1)\n\ndef world():\n    return _var('WORLD_SIZE', 1)\n",
    )
    .unwrap();
    let main = "from pkg.utils import node_local_rank, get_world_size\nfrom pkg.utils.ranks import cache_size, world\n\ndef main():\n    r = node_local_rank()\n    w = get_world_size()\n    c = cache_size()\n    n = world()\n";
    std::fs::write(dir.join("train.py"), main).unwrap();
    let project = FileProject::new([dir.clone()]);
    let m = Module::parse_file(main, &dir.join("train.py"));
    let cx = Analysis::new(Some(&project));
    // The variable a helper reads is named by its caller: `LOCAL_RANK` is the rank.
    let r = cx.dependence(&m, 8, "r");
    assert!(kinds(&r).contains(&RankId), "{r:?}");
    assert!(r.dependence.iter().any(|d| d.evidence.contains("'LOCAL_RANK'")), "{r:?}");
    // A library function re-exported by the package is the library's.
    let w = cx.dependence(&m, 8, "w");
    assert!(w.dependence.is_empty(), "{w:?}");
    // Any other variable is the host's; `WORLD_SIZE` is the same everywhere.
    let c = cx.dependence(&m, 8, "c");
    assert!(kinds(&c).contains(&Environment) && !kinds(&c).contains(&RankId), "{c:?}");
    let n = cx.dependence(&m, 8, "n");
    assert!(!kinds(&n).contains(&RankId), "{n:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "desync-flow-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[ignore = "prints evidence for a human to read"]
fn show_evidence() {
    for (marker, expr) in
        [("# <use>", "bad_epochs >= PATIENCE"), ("# <use>", "x"), ("host =", "late")]
    {
        println!("{expr}: {:#?}", at(TRAINER, marker, expr).dependence);
    }
}

#[test]
fn fields_of_the_projects_own_objects_stay_apart() {
    let src = "\
import os
from dataclasses import dataclass

@dataclass
class DistContext:
    rank: int
    world_size: int

def init_distributed():
    rank = int(os.environ['RANK'])
    world_size = int(os.environ['WORLD_SIZE'])
    return DistContext(rank, world_size)

def main():
    ctx = init_distributed()
    n = 1  # <use>
";
    assert_eq!(kinds(&at(src, "# <use>", "ctx.rank == 0")), [RankId]);
    let world = at(src, "# <use>", "ctx.world_size");
    assert!(world.dependence.is_empty() && world.complete, "{world:?}");
}

#[test]
fn lengths_of_returned_tensors_follow_their_sizes() {
    let src = "\
import torch
from torch.utils.data import DataLoader, TensorDataset

def make_shard(rank, n):
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(n, 16, generator=g)
    y = (x @ torch.ones(16)).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    return x, y

def main(rank, steps):
    x, y = make_shard(rank, steps * 32)
    loader = DataLoader(TensorDataset(x, y), batch_size=32)
    for step, (xb, yb) in enumerate(loader):
        pass  # <use>
";
    let step = at(src, "# <use>", "step");
    assert!(!kinds(&step).contains(&RankId), "{step:?}");
    // Read inside its loop, the counter is the pass number, the same on every rank on the same
    // pass: the batches' count (decided by the caller's `steps`) is the loop's own decision.
    assert!(kinds(&step).is_empty(), "{step:?}");
    assert!(step.length_parameters.is_empty(), "{step:?}");
}

fn condition_at(src: &str, marker: &str, expr: &str) -> Finding {
    let m = Module::parse(src);
    Analysis::default().condition(&m, line(src, marker), expr)
}

/// A value computed from the rank is `None` (or of a type) on every rank alike; only a choice
/// between assignments makes one rank's value `None`.
#[test]
fn structure_tests_are_decided_by_choices_not_by_computed_values() {
    let src = "\
import os
import torch.distributed as dist

def f(vocab, shards):
    tp_rank = dist.get_rank()
    start = tp_rank * vocab
    mine = shards[tp_rank]
    chosen = None if tp_rank != 0 else vocab
    cache = os.environ.get('NODE_CACHE')
    rigid = isinstance(mine, dict)
    try:
        dist.barrier()
    except RuntimeError as err:
        timed_out = isinstance(err, TimeoutError)
    pass  # <use>
";
    // (`vocab` and `shards` are parameters nothing in view passes: unknown, not the rank.)
    assert!(!kinds(&condition_at(src, "<use>", "start is None")).contains(&RankId));
    assert!(!kinds(&condition_at(src, "<use>", "isinstance(mine, dict)")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "chosen is None")).contains(&RankId));
    assert_eq!(kinds(&condition_at(src, "<use>", "cache is None")), [Environment]);
    // The values themselves still depend on the rank.
    assert!(kinds(&condition_at(src, "<use>", "start > 0")).contains(&RankId));
    // So do a tensor's number of dimensions and dtype compared with a constant.
    assert!(!kinds(&condition_at(src, "<use>", "mine.dim() == 2")).contains(&RankId));
    assert!(!kinds(&condition_at(src, "<use>", "len(mine.shape) >= 1")).contains(&RankId));
    assert!(!kinds(&condition_at(src, "<use>", "mine.dtype != torch.float32")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "chosen.ndim == 1")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "mine.size(0) == 2")).contains(&RankId));
    // A key written out, tested for membership; a name that holds a structure test.
    assert!(!kinds(&condition_at(src, "<use>", "'step' in mine")).contains(&RankId));
    assert!(!kinds(&condition_at(src, "<use>", "rigid")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "tp_rank in mine")).contains(&RankId));
    // Which exception a rank caught is that rank's own.
    assert!(kinds(&condition_at(src, "<use>", "timed_out")).contains(&Exception));
}

/// Whether two values are one object (`a is b`) is decided by the code path that made them,
/// and by an item picked by the rank; a returned test is decided as in an `if`.
#[test]
fn identity_tests_and_returned_tests_are_decided_by_choices_and_picks() {
    let src = "\
import torch.distributed as dist

def is_bias(param, bias):
    return bias is not None and param is bias

def f(batch, shards, bias):
    rank = dist.get_rank()
    mine = shards[rank]
    chosen = bias if rank == 0 else None
    loss = batch.sum() * rank
    pass  # <use>

f(loader_batch, shards, model_bias)
";
    assert!(!kinds(&condition_at(src, "<use>", "loss is bias")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "batch is mine")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "batch is chosen")).contains(&RankId));
    assert!(!kinds(&condition_at(src, "<use>", "is_bias(loss, bias)")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "is_bias(loss, chosen)")).contains(&RankId));
    // A literal on either side is a test of the value, not of its identity.
    assert!(kinds(&condition_at(src, "<use>", "(loss > 0) is True")).contains(&RankId));
}

/// Evidence through what is written into a container, through a field of an object held by
/// another, or through what is read of an item picked by the rank is indirect; a choice, an
/// in-place tensor update and the picked item itself are direct.
#[test]
fn indirect_steps_are_marked_on_the_evidence() {
    let src = "\
import torch
import torch.distributed as dist

class Loop:
    def __init__(self, groups, counts):
        rank = dist.get_rank()
        self.state = make_state(rank)
        self.group = groups[rank]
        self.budget = counts[rank]
        keys = []
        if rank == 0:
            keys.append('model')
        flag = torch.zeros(1)
        stop = False
        if rank == 0:
            flag.fill_(1)
            stop = True
        pass  # <use>

def make_state(rank):
    return {'rank': rank}
";
    let indirect = |expr: &str| {
        let f = at(src, "<use>", expr);
        let rank: Vec<bool> =
            f.dependence.iter().filter(|d| d.kind == RankId).map(|d| d.indirect).collect();
        assert_eq!(rank.len(), 1, "{expr}: {f:?}");
        rank[0]
    };
    assert!(indirect("len(keys)"));
    assert!(indirect("self.state.step"));
    assert!(indirect("self.group.size()"));
    assert!(!indirect("self.budget"));
    assert!(!indirect("flag.item()"));
    assert!(!indirect("stop"));
}

/// A value assigned in one clause of an `if` never reaches a use in another clause of it: the
/// use sees the binding before the `if` (here the loop's item).
#[test]
fn a_sibling_clause_assignment_does_not_reach_the_use() {
    let src = "\
import torch.distributed as dist

def save(state, moe):
    rank = dist.get_rank()
    for k, v in state.items():
        if moe:
            v = v[: rank + 1]
        elif k != 'step':
            pass  # <elif>
        pass  # <after>
";
    assert!(!kinds(&at(src, "<elif>", "v")).contains(&RankId));
    // After the `if`, the reshaped value can be the one seen.
    assert!(kinds(&at(src, "<after>", "v")).contains(&RankId));
}

/// `for ranks in groups: g = new_group(ranks); if rank in ranks: mine = g`: every rank keeps
/// one group of the enumeration, so whether it kept one is the same everywhere.
#[test]
fn membership_of_an_enumerated_rank_set_is_taken_on_every_rank() {
    let src = "\
import torch.distributed as dist

def setup(groups, leaders):
    rank = dist.get_rank()
    mine = None
    for ranks in groups:
        g = dist.new_group(ranks)
        if rank in ranks:
            mine = g
    lead = None
    if rank in leaders:
        lead = dist.new_group(leaders)
    pass  # <use>
";
    assert!(!kinds(&condition_at(src, "<use>", "mine is not None")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "lead is not None")).contains(&RankId));
}

/// A parameter reached only through what is written into a container is an indirect one:
/// what callers pass for it reaches the value indirectly.
#[test]
fn parameters_reached_through_a_container_are_marked_indirect() {
    let src = "\
def f(pinned, direct):
    state = {}
    state['w'] = pinned
    x = state['w']
    y = direct
    pass  # <use>
";
    let x = condition_at(src, "<use>", "x is None");
    assert_eq!(x.indirect_parameters, ["pinned"], "{x:?}");
    let both = condition_at(src, "<use>", "x is None or y is None");
    assert_eq!(both.parameters.len(), 2, "{both:?}");
    assert_eq!(both.indirect_parameters, ["pinned"], "{both:?}");
    let y = condition_at(src, "<use>", "y is None");
    assert!(y.indirect_parameters.is_empty(), "{y:?}");
}

/// What is read of an item the rank picked — an attribute, a method, a field under a fixed
/// key — reaches the read indirectly, also when the item is passed to a helper that reads it;
/// a key the same on every rank, tested for membership, is a test of structure.
#[test]
fn reads_of_a_picked_item_are_indirect_through_helpers_too() {
    let src = "\
import torch.distributed as dist
from constants import PADDINGS

def layout(sd):
    return sd['state']

def size_of(pg):
    return pg.size()

def f(saved, groups):
    rank = dist.get_rank()
    mine = saved[rank]
    state = layout(mine)
    width = size_of(groups[rank])
    padded = PADDINGS in mine
    own = mine
    pass  # <use>
";
    let read = |e: &str| {
        let f = at(src, "# <use>", e);
        f.dependence.iter().filter(|d| d.kind == RankId).map(|d| d.indirect).collect::<Vec<_>>()
    };
    assert_eq!(read("state"), [true]);
    assert_eq!(read("width"), [true]);
    assert_eq!(read("mine['step']"), [true]);
    assert_eq!(read("own"), [false], "the picked item itself is direct");
    assert!(!kinds(&condition_at(src, "<use>", "padded")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "rank in mine")).contains(&RankId));
}

/// An attribute assigned a structure test (`self.enabled = self.state is not None`) is decided
/// as the test would be in an `if`: a value computed from the rank is not `None` anywhere.
#[test]
fn an_attribute_holding_a_structure_test_is_decided_by_choices() {
    let src = "\
import torch.distributed as dist

class Relay:
    def __init__(self, world):
        self.rank = dist.get_rank()
        self.state = make_state(self.rank, world)
        self.enabled = self.state is not None
        self.picked = None if self.rank else world
        self.has_pick = self.picked is not None

    def step(self):
        pass  # <use>
";
    assert!(!kinds(&condition_at(src, "<use>", "self.enabled")).contains(&RankId));
    assert!(kinds(&condition_at(src, "<use>", "self.has_pick")).contains(&RankId));
}

const RUN_STATE: &str = "\
import os

def step_of(state):
    return state['iter_num']

def main(loader):
    state = {'model': os.environ.get('MODEL'), 'iter_num': 0, 'seen': []}
    nested = {'inner': {'k': os.environ.get('K')}, 'count': 0}
    n = step_of(state)  # <ask>
    state['seen'].append(1)
    return n

def restored(marker):
    state = {'model': None, 'iter_num': int(os.environ.get('START', '0'))}
    n = step_of(state)  # <restored>
    return n
";

#[test]
fn entries_of_a_dict_written_out_are_kept_apart() {
    // The entry read, not what the other entries were built from.
    let counter = at(RUN_STATE, "# <ask>", "state['iter_num']");
    assert!(counter.dependence.is_empty(), "{counter:?}");
    let model = at(RUN_STATE, "# <ask>", "state['model']");
    assert_eq!(kinds(&model), [Environment], "{model:?}");
    // Through a helper's parameter, read under a key: the caller's entry.
    let through = at(RUN_STATE, "# <ask>", "step_of(state)");
    assert!(through.dependence.is_empty(), "{through:?}");
    let restored = at(RUN_STATE, "# <restored>", "step_of(state)");
    assert_eq!(kinds(&restored), [Environment], "{restored:?}");
    // An entry holding a dict is read entry by entry too; a key not written out is the whole.
    let count = at(RUN_STATE, "# <ask>", "nested['count']");
    assert!(count.dependence.is_empty(), "{count:?}");
    let inner = at(RUN_STATE, "# <ask>", "nested['inner']['k']");
    assert_eq!(kinds(&inner), [Environment], "{inner:?}");
    let other = at(RUN_STATE, "# <ask>", "state['missing']");
    assert_eq!(kinds(&other), [Environment], "{other:?}");
}

const MEMBERS_ONLY: &str = "\
import torch.distributed as dist

def sync_shared_weight(chunks, group):
    weight = None
    if dist.get_rank() in dist.get_process_group_ranks(group):
        chunk = chunks[0]
        weight = chunk.shared_weight()
        if weight is None:  # <inside>
            return
        log_norm(weight)
    if weight is None:  # <after>
        return
    dist.barrier()
";

#[test]
fn tests_that_hold_both_the_binding_and_the_use_decide_nothing_between_them() {
    // Every rank that reads `weight` inside the block passed the membership test, as did the
    // assignment it reads: what is left is what the caller passes.
    let inside = at(MEMBERS_ONLY, "# <inside>", "weight is None");
    assert_eq!(kinds(&inside), [Unknown], "{inside:?}");
    // After the block, the members hold the chunk's weight and the others still hold `None`.
    let after = at(MEMBERS_ONLY, "# <after>", "weight is None");
    assert!(kinds(&after).contains(&RankId), "{after:?}");
}

/// How many items a shard holds, not what they are: `len` of a shuffled list counts alike on
/// every rank, a piece of a split picked by the rank can be the shorter last one, and a stride
/// by the world size over a span cut to a multiple of it gives every rank as many.
#[test]
fn lengths_of_shards_picked_by_the_rank() {
    let src = "\
import torch
import torch.distributed as dist

def f(ids, world, n):
    rank = dist.get_rank()
    perm = ids[torch.randperm(len(ids))]
    count = len(perm)
    piece = torch.split(ids, n)[rank]
    strided = ids[rank::world]
    even = ids[: n * world][rank::world]
    bounded = ids[rank : n * world : world]
    pass  # <use>
";
    let m = Module::parse(src);
    let length = |e: &str| {
        let f = Analysis::default().length_dependence(&m, line(src, "# <use>"), e);
        f.dependence.iter().filter(|d| d.kind == RankId).map(|d| d.indirect).collect::<Vec<_>>()
    };
    // What the shuffle picks is read of the items (indirect), not their number.
    let count = at(src, "# <use>", "count");
    assert!(count.dependence.iter().all(|d| d.indirect), "len() reads no item: {count:?}");
    assert_eq!(length("piece"), [false], "the last piece of a split is shorter");
    assert_eq!(length("strided"), [false]);
    assert_eq!(length("even"), Vec::<bool>::new());
    assert_eq!(length("bounded"), Vec::<bool>::new());
    assert_eq!(length("ids[rank]"), [true], "another pick: only indirect");
}

/// A counter read inside its loop is the pass number: the same on every rank on the same pass,
/// however many passes each rank's own data makes. Read after the loop it is how many passes
/// ran, which the rank's own data decides.
const SHARD_LOOP: &str = "\
import torch
import torch.distributed as dist

def batches_of(rank):
    return [torch.randn(4) for _ in range(10 + rank)]

def run(settings):
    rank = dist.get_rank()
    shards = batches_of(rank)
    for it, shard in enumerate(shards):
        if it % settings['log_every'] == 0:  # <inside>
            pass
    for j in range(rank, 100, 4):
        if j > 50:  # <offset>
            pass
    for k in range(len(shards)):
        if k == 3:  # <ranged>
            pass
    if it > 5:  # <after>
        pass
";

#[test]
fn a_counter_inside_its_loop_counts_passes_not_the_rank_local_length() {
    let inside = at(SHARD_LOOP, "# <inside>", "it");
    assert!(inside.dependence.is_empty() && inside.complete, "{inside:?}");
    let ranged = at(SHARD_LOOP, "# <ranged>", "k == 3");
    assert!(ranged.dependence.is_empty() && ranged.complete, "{ranged:?}");
    // `range(rank, ...)` starts each rank elsewhere: the counter's value differs by rank.
    let offset = at(SHARD_LOOP, "# <offset>", "j > 50");
    assert_eq!(kinds(&offset), [RankId], "{offset:?}");
    // After the loop the counter holds how many passes ran: the rank's own list's length.
    let after = at(SHARD_LOOP, "# <after>", "it > 5");
    assert!(kinds(&after).contains(&RankId), "{after:?}");
}

#[test]
fn a_configuration_document_read_from_a_file_is_configuration_not_the_host() {
    // Read through a helper whose document is iterated (its length), as a config loader does.
    let doc = "import yaml\n\ndef as_fields(v):\n    if isinstance(v, dict):\n        return {k: as_fields(x) for k, x in v.items()}\n    return v\n\ndef load(path):\n    with open(path) as fh:\n        return as_fields(yaml.safe_load(fh))\n\ndef main():\n    cfg = load('run.yaml')\n    if cfg['every'] > 2:\n        pass\n";
    let f = Analysis::default().dependence(&Module::parse(doc), 14, "cfg['every'] > 2");
    assert!(!kinds(&f).contains(&Environment), "{f:?}");
    assert!(!f.configuration.is_empty(), "{f:?}");
}

#[test]
fn an_empty_container_handed_to_a_call_holds_what_the_call_was_given() {
    let src = "\
import torch.distributed as dist

def evaluate(runner, loader):
    for inputs in loader:
        scores = []
        runner.run(inputs, sink=scores)
        mean = sum(scores) / len(scores)
        if mean > 0.5:  # <use>
            pass
        count = []
        print(inputs, count)
";
    let f = at(src, "# <use>", "mean > 0.5");
    assert!(!f.dependence.is_empty() || !f.complete, "filled by `runner.run`: {f:?}");
    assert!(!f.parameters.is_empty() || f.dependence.iter().any(|d| d.kind != Unknown), "{f:?}");
}

/// A framework object handed to a helper as a parameter keeps its type: the helper's
/// `state.is_main_process` is the rank read the table names, seen from the call that passed an
/// `Accelerator()`, through a project helper's summary and a second helper in between.
#[test]
fn a_framework_object_passed_as_a_parameter_keeps_its_rank_attributes() {
    let src = "\
from accelerate import Accelerator

def writes_reports(state):
    return state.is_main_process

def relay(acc):
    return writes_reports(acc)

def processes(state):
    return state.num_processes

def fit(model):
    accelerator = Accelerator()
    if relay(accelerator):  # <use>
        pass
    n = processes(accelerator)
";
    let f = at(src, "# <use>", "relay(accelerator)");
    assert_eq!(kinds(&f), [RankId], "{f:?}");
    assert!(f.dependence[0].evidence.contains("accelerator.is_main_process"), "{f:?}");
    // A uniform attribute read the same way stays uniform.
    let n = at(src, "# <use>", "processes(accelerator)");
    assert!(n.dependence.is_empty() && n.complete, "{n:?}");
}

/// The bridge's walk out of a frame: a condition reading an attribute of a parameter is
/// decided by what the caller passed, here the first element a framework factory returns
/// (`model_engine, _, _, _ = deepspeed.initialize(...)`), in another module.
#[test]
fn an_attribute_of_a_parameter_is_read_of_the_factory_value_the_caller_passed() {
    let dir = tempfile_dir().join("factory");
    std::fs::create_dir_all(&dir).unwrap();
    let helper = "def export(model_engine, out_dir):\n    if model_engine.local_rank == 0:\n        model_engine.save_checkpoint(out_dir)\n";
    std::fs::write(dir.join("exporting.py"), helper).unwrap();
    let main = "import deepspeed\nfrom exporting import export\n\ndef run(net, cfg):\n    me, _, _, _ = deepspeed.initialize(model=net, config=cfg)\n    export(me, 'ckpt')\n";
    std::fs::write(dir.join("run.py"), main).unwrap();
    let project = FileProject::new([dir.clone()]);
    let callee = Module::parse_file(helper, &dir.join("exporting.py"));
    let caller = Module::parse_file(main, &dir.join("run.py"));
    let cx = Analysis::new(Some(&project));
    let inside = cx.dependence(&callee, 2, "model_engine.local_rank == 0");
    assert_eq!(inside.parameters, ["model_engine"], "{inside:?}");
    assert_eq!(inside.member_reads, [("model_engine".to_owned(), vec!["local_rank".to_owned()])]);
    let found = cx
        .through_caller(&callee, 2, &inside.parameters, &inside.member_reads, &[], &caller, 6)
        .expect("the call is on line 6");
    assert_eq!(kinds(&found), [RankId], "{found:?}");
    assert!(found.dependence[0].evidence.contains("me.local_rank"), "{found:?}");
    assert!(found.complete, "{found:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A mask drawn at random is as long as the draw's sizes: a dataset built through
/// `torch.where(mask, ...)` has as many items on every rank, whatever the draw gives.
#[test]
fn a_random_mask_is_as_long_as_its_sizes() {
    let src = "\
import torch
from torch.utils.data import DataLoader, TensorDataset

def corrupted(n, width, seed):
    g = torch.Generator().manual_seed(seed)
    clean = torch.zeros(n, width)
    keep = torch.rand(n, width, generator=g) >= 0.1
    x = torch.where(keep, clean, torch.ones(n, width))
    return DataLoader(TensorDataset(x), batch_size=4)

def epoch(cfg):
    loader = corrupted(cfg.n, cfg.width, cfg.seed)
    for batch in loader:  # <use>
        pass
";
    let m = Module::parse(src);
    let f = Analysis::default().length_dependence(&m, line(src, "# <use>"), "loader");
    assert!(!kinds(&f).contains(&Randomness), "{f:?}");
}

/// A computation from a tensor's values — a count per value, a selection by a mask, a
/// reduction — is decided by what the tensor holds: rows a rank appended from its own data
/// reach the list's contents only (indirect), but what is counted, selected or summed from
/// them directly. A collective that leaves every rank the same result still agrees it.
#[test]
fn computations_from_a_tensors_values_are_decided_by_its_contents() {
    let src = "\
import torch
import torch.distributed as dist

def local(width):
    rank = dist.get_rank()
    rows = []
    for i in range(4):
        rows.append([rank * i % 7] * width)
    ids = torch.tensor(rows)
    keep = ids != 0
    counts = torch.bincount(ids.flatten())
    total = keep.sum()
    agreed = keep.sum()
    dist.all_reduce(agreed)
    pass  # <use>
";
    let rank_indirect = |expr: &str| -> Option<bool> {
        let f = at(src, "<use>", expr);
        f.dependence.iter().find(|d| d.kind == RankId).map(|d| d.indirect)
    };
    assert_eq!(rank_indirect("ids"), Some(true));
    assert_eq!(rank_indirect("ids.shape[0]"), Some(true));
    assert_eq!(rank_indirect("keep"), Some(true));
    assert_eq!(rank_indirect("ids[keep]"), Some(false));
    assert_eq!(rank_indirect("counts"), Some(false));
    assert_eq!(rank_indirect("total"), Some(false));
    assert_eq!(rank_indirect("total.item()"), Some(false));
    assert_eq!(rank_indirect("agreed"), None);
}

/// The ways out of a function above a line: its own guarded `return`/`raise`, and a process
/// exit reached through the project's helpers in another module (a validation helper calling
/// a logger that exits). A top-level `return` and a callee's plain `return` are not exits.
#[test]
fn exits_before_a_line_follow_calls_into_helpers_that_end_the_process() {
    let dir = tempfile_dir().join("exits");
    std::fs::create_dir_all(&dir).unwrap();
    let checks = "import sys\n\ndef die(msg):\n    print(msg)\n    sys.exit(3)\n\ndef validate(rows):\n    if rows.min() < 0:\n        die('negative')\n    return rows\n";
    std::fs::write(dir.join("checks.py"), checks).unwrap();
    let main = "import torch.distributed as dist\nfrom checks import validate\n\ndef report(rows, rank):\n    if rank in SKIP:\n        return None\n    rows = validate(rows)\n    dist.all_reduce(rows)\n    return rows\n";
    std::fs::write(dir.join("report.py"), main).unwrap();
    let project = FileProject::new([dir.clone()]);
    let m = Module::parse_file(main, &dir.join("report.py"));
    let cx = Analysis::new(Some(&project));
    let exits = cx.exits_before(&m, line(main, "dist.all_reduce"));
    let found: Vec<(String, u32, usize, bool)> =
        exits.iter().map(|e| (e.how.clone(), e.line, e.depth, e.module.is_some())).collect();
    assert_eq!(
        found,
        [
            ("return".to_owned(), 6, 0, false),
            ("die".to_owned(), line(checks, "die('negative')"), 1, true)
        ]
    );
    // Below the line nothing counts; a function with no way out has none.
    assert!(cx.exits_before(&m, line(main, "if rank in SKIP")).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}

/// A function taken as a value is registered somewhere; a call of it is no registration.
#[test]
fn value_references_are_registrations_not_calls() {
    let src = "bus = Bus()\nif rank == 0:\n    bus.subscribe('end', writer.on_end)\nhooks = [on_end]\nwriter.on_end(3)\nself.on_end = None\n";
    let m = Module::parse(src);
    assert_eq!(Analysis::default().value_references(&m, "on_end"), [3, 4]);
}
