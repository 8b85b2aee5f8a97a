#!/usr/bin/env python3
"""What Flight Recorder records for each framework API, measured on a real 2-process Gloo job.

Every probe calls one API on both ranks (torch.distributed, DDP, FSDP2, DTensor, the
distributed state-dict helpers, Lightning hooks and strategy calls, Accelerate) and reads the
new Flight Recorder entries it produced: the op name (`profiling_name`), the sizes, the
process group and the Python stack FR captured, trimmed to the frames between the probe and
torch.distributed. The result (rank 0's view) is one JSON document; docs/frameworks-research.md
is written from it.

Run by hand (it needs pytorch-lightning and accelerate next to torch; the test venv has
torch only):

    python3 -m venv /tmp/fwvenv
    echo "$(scripts/venv.sh)/lib/python3.11/site-packages" > /tmp/fwvenv/lib/python3.11/site-packages/torch.pth
    /tmp/fwvenv/bin/pip install --no-deps pytorch-lightning==2.6.6 lightning-fabric==2.6.6 \
        lightning==2.6.6 accelerate==1.15.0 torchmetrics lightning-utilities tqdm psutil safetensors \
        huggingface_hub typing_extensions
    TORCH_FR_BUFFER_SIZE=20000 /tmp/fwvenv/bin/torchrun --nproc-per-node 2 bench/fr_api_probe.py OUT.json

Only Gloo on CPU is exercised: op names carry the "gloo:" prefix, and a few ops are recorded
differently by NCCL (see the document for the C++ sources).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import torch.distributed as dist

RESULTS: list[dict] = []
_SEEN: set[int] = set()


def fr_entries() -> list[dict]:
    raw = torch._C._distributed_c10d._dump_fr_trace(includeCollectives=True, includeStackTraces=True)
    return pickle.loads(raw).get("entries", [])


def _mark_seen() -> None:
    _SEEN.update(e["record_id"] for e in fr_entries())


def _frame_text(f: dict) -> str:
    path = f.get("filename", "")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    if path.endswith("fr_api_probe.py"):
        path = "probe.py"
    return f"{path}:{f.get('line')} {f.get('name')}"


def _trim(frames: list[dict]) -> list[str]:
    """FR stores the innermost frame first; keep from the probe's own frame down to the
    first frame inside torch.distributed (outermost first, like a traceback)."""
    texts = [_frame_text(f) for f in reversed(frames)]
    start = max((i for i, t in enumerate(texts) if t.startswith("probe.py")), default=0)
    out = []
    for t in texts[start:]:
        out.append(t)
        if t.startswith("torch/distributed/distributed_c10d.py"):
            break
    return out


def _callers(frames: list[dict]) -> list[str]:
    """The frames outside the probe's own helpers, outermost first: who called the hook that
    issued the collective (the framework's loop, trainer and hook-dispatch frames)."""
    texts = [_frame_text(f) for f in reversed(frames)]
    first = next((i for i, t in enumerate(texts) if t.startswith("probe.py") and " probe" in t), None)
    return texts[:first] if first is not None else []


def probe(name: str, fn, note: str = "") -> None:
    """Runs fn() on every rank and records the FR entries it added."""
    dist.barrier()
    _mark_seen()
    error = None
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - recorded in the result
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    new = [e for e in fr_entries() if e["record_id"] not in _SEEN]
    _SEEN.update(e["record_id"] for e in new)
    RESULTS.append({
        "probe": name,
        "note": note,
        "error": error,
        "ops": [{
            "op": e["profiling_name"],
            "pg": list(e.get("process_group", [])),
            "in": e.get("input_sizes"),
            "out": e.get("output_sizes"),
            "dtype": e.get("input_dtypes"),
            "stack": _trim(e.get("frames", [])),
            "callers": _callers(e.get("frames", [])),
        } for e in new],
    })
    dist.barrier()


# ------------------------------------------------------------------------ torch.distributed

def torch_probes(rank: int, world: int) -> None:
    t = torch.ones(4)
    probe("dist.all_reduce", lambda: dist.all_reduce(t))
    probe("dist.broadcast", lambda: dist.broadcast(t, src=0))
    probe("dist.reduce", lambda: dist.reduce(t, dst=0))
    probe("dist.all_gather (list)", lambda: dist.all_gather([torch.zeros(4) for _ in range(world)], t))
    probe("dist.all_gather_into_tensor", lambda: dist.all_gather_into_tensor(torch.zeros(4 * world), t))
    probe("dist.reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(torch.zeros(2), torch.ones(2 * world)))
    probe("dist.reduce_scatter (list)", lambda: dist.reduce_scatter(torch.zeros(2), [torch.ones(2) for _ in range(world)]))
    probe("dist.all_to_all_single", lambda: dist.all_to_all_single(torch.zeros(2 * world), torch.ones(2 * world)))
    probe("dist.all_to_all (list)", lambda: dist.all_to_all([torch.zeros(2) for _ in range(world)],
                                                          [torch.ones(2) for _ in range(world)]))
    probe("dist.gather", lambda: dist.gather(t, [torch.zeros(4) for _ in range(world)] if rank == 0 else None, dst=0))
    probe("dist.scatter", lambda: dist.scatter(torch.zeros(4), [torch.ones(4) for _ in range(world)] if rank == 0 else None, src=0))
    probe("dist.barrier", lambda: dist.barrier())
    probe("dist.monitored_barrier", lambda: dist.monitored_barrier())
    probe("dist.all_gather_object", lambda: dist.all_gather_object([None] * world, {"rank": rank}))
    probe("dist.broadcast_object_list", lambda: dist.broadcast_object_list([{"x": 1}], src=0))
    probe("dist.gather_object", lambda: dist.gather_object({"r": rank}, [None] * world if rank == 0 else None, dst=0))
    probe("dist.scatter_object_list", lambda: dist.scatter_object_list([None], [{"r": i} for i in range(world)] if rank == 0 else None, src=0))
    probe("dist.new_group", lambda: dist.new_group(list(range(world))))
    sub = dist.new_group([0]) if world > 1 else None
    probe("dist.all_reduce on a one-rank sub-group (only rank 0 calls)",
          lambda: dist.all_reduce(torch.ones(1), group=sub) if rank == 0 else None)
    probe("dist.all_reduce_coalesced", lambda: dist.all_reduce_coalesced([torch.ones(2), torch.ones(3)]))

    def coalesced_manager():
        with dist._coalescing_manager(async_ops=False):
            dist.all_reduce(torch.ones(2))
            dist.all_reduce(torch.ones(3))
    probe("dist._coalescing_manager (2 all_reduce)", coalesced_manager)

    def funcol():
        import torch.distributed._functional_collectives as fc
        fc.all_reduce(torch.ones(4), "sum", dist.group.WORLD).wait()
        fc.all_gather_tensor(torch.ones(2), 0, dist.group.WORLD).wait()
        fc.reduce_scatter_tensor(torch.ones(2 * world), "sum", 0, dist.group.WORLD).wait()
    probe("functional collectives (all_reduce, all_gather_tensor, reduce_scatter_tensor)", funcol)


def ddp_probes(rank: int, world: int) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1))
    holder = {}
    probe("DDP(model) construction", lambda: holder.setdefault("m", DDP(net)))
    model = holder["m"]
    x = torch.randn(4, 8)
    probe("DDP forward (first iteration)", lambda: model(x))
    probe("DDP loss.backward (first iteration)", lambda: model(x).sum().backward())
    probe("DDP forward (later iteration)", lambda: model(x))
    probe("DDP loss.backward (later iteration)", lambda: model(x).sum().backward())

    def no_sync():
        with model.no_sync():
            model(x).sum().backward()
    probe("DDP backward under no_sync()", no_sync)

    def join():
        from torch.distributed.algorithms.join import Join
        batches = 2 if rank == 0 else 3
        with Join([model]):
            for _ in range(batches):
                model(x).sum().backward()
    probe("DDP under Join, ranks with 2 and 3 batches", join)

    def syncbn():
        bn = DDP(torch.nn.SyncBatchNorm(3))
        bn(torch.randn(4, 3, 2, 2)).sum().backward()
    probe("DDP(SyncBatchNorm) forward+backward", syncbn, note="construction, then one train step")


def fsdp_probes(rank: int, world: int) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    for layer in model:
        fully_shard(layer, mesh=mesh)
    holder = {}
    probe("fully_shard(model) (FSDP2 wrap)", lambda: holder.setdefault("m", fully_shard(model, mesh=mesh)))
    x = torch.randn(4, 8)
    probe("FSDP2 forward", lambda: holder.setdefault("out", model(x)))
    probe("FSDP2 backward", lambda: holder["out"].sum().backward())

    def full_state_dict():
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    probe("get_model_state_dict(full_state_dict=True, cpu_offload=True)", full_state_dict)

    def sharded_state_dict():
        from torch.distributed.checkpoint.state_dict import get_model_state_dict
        get_model_state_dict(model)
    probe("get_model_state_dict() (sharded)", sharded_state_dict)

    def get_state_dict_full():
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict
        opt = torch.optim.AdamW(model.parameters())
        model(x).sum().backward()
        opt.step()
        get_state_dict(model, opt, options=StateDictOptions(full_state_dict=True))
    probe("get_state_dict(model, optim, full_state_dict=True)", get_state_dict_full,
          note="includes one forward/backward/step to create optimizer state")

    # FSDP1 (FullyShardedDataParallel) refuses CPU-only processes in torch 2.11
    # ("FSDP needs a non-CPU accelerator device"), so it is not probed here.


def dtensor_probes(rank: int, world: int) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (world,))
    full = torch.arange(4.0 * world * 2).reshape(2 * world, 4)
    holder = {}
    probe("distribute_tensor(Shard(0))", lambda: holder.setdefault("s", distribute_tensor(full, mesh, [Shard(0)])))
    s = holder["s"]
    probe("DTensor Shard(0) -> Replicate", lambda: s.redistribute(mesh, [Replicate()]))
    probe("DTensor Shard(0) -> Shard(1)", lambda: s.redistribute(mesh, [Shard(1)]))
    probe("DTensor.full_tensor()", lambda: s.full_tensor())
    p = DTensor.from_local(torch.ones(2, 4), mesh, [Partial()])
    probe("DTensor Partial -> Replicate", lambda: p.redistribute(mesh, [Replicate()]))
    probe("DTensor Partial -> Shard(0)", lambda: p.redistribute(mesh, [Shard(0)]))


# ------------------------------------------------------------------------ Lightning

def lightning_probes(rank: int, world: int, pkg: str) -> None:
    if pkg == "pytorch_lightning":
        import pytorch_lightning as pl
        from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
    else:
        import lightning.pytorch as pl
        from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

    tag = pkg

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch).pow(2).mean()
            if batch_idx == 0 and self.current_epoch == 0:
                probe(f"{tag}: self.log(sync_dist=True) in training_step (on_step default)",
                      lambda: self.log("probe_step", loss.detach(), sync_dist=True))
                probe(f"{tag}: self.log(sync_dist=True, on_step=False, on_epoch=True) in training_step",
                      lambda: self.log("probe_epoch", loss.detach(), sync_dist=True, on_step=False, on_epoch=True))
                probe(f"{tag}: self.log(sync_dist=False) in training_step",
                      lambda: self.log("probe_nosync", loss.detach()))
            return loss

        def validation_step(self, batch, batch_idx):
            val = self.layer(batch).pow(2).mean()
            self.log("val_loss", val, sync_dist=True)

        def on_train_epoch_end(self):
            if self.current_epoch != 0:
                return
            probe(f"{tag}: trainer.callback_metrics (after epoch-level sync_dist logs)",
                  lambda: self.trainer.callback_metrics)
            probe(f"{tag}: self.all_gather(tensor)", lambda: self.all_gather(torch.ones(2)))
            probe(f"{tag}: self.all_gather(dict of tensors)", lambda: self.all_gather({"a": torch.ones(2), "b": torch.ones(1)}))
            probe(f"{tag}: trainer.strategy.barrier()", lambda: self.trainer.strategy.barrier("probe"))
            probe(f"{tag}: trainer.strategy.broadcast(obj)", lambda: self.trainer.strategy.broadcast({"k": 1}))
            probe(f"{tag}: trainer.strategy.reduce(tensor, 'mean')", lambda: self.trainer.strategy.reduce(torch.ones(1), reduce_op="mean"))
            probe(f"{tag}: trainer.strategy.reduce_boolean_decision(flag)",
                  lambda: self.trainer.strategy.reduce_boolean_decision(rank == 0))
            probe(f"{tag}: trainer.log_dir", lambda: self.trainer.log_dir)
            probe(f"{tag}: trainer.save_checkpoint(path)",
                  lambda: self.trainer.save_checkpoint(os.path.join(CKPT_DIR, f"{tag}-manual.ckpt")))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    class Watch(pl.Callback):
        """Brackets whole trainer phases, to attribute the framework's own collectives."""

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            if batch_idx == 1 and trainer.current_epoch == 0:
                _mark_seen()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if batch_idx == 1 and trainer.current_epoch == 0:
                new = [e for e in fr_entries() if e["record_id"] not in _SEEN]
                _SEEN.update(e["record_id"] for e in new)
                RESULTS.append({"probe": f"{tag}: one plain training batch (between batch_start and batch_end hooks)",
                                "note": "DDP strategy; automatic optimization", "error": None,
                                "ops": [{"op": e["profiling_name"], "pg": list(e.get("process_group", [])),
                                         "in": e.get("input_sizes"), "out": e.get("output_sizes"),
                                         "dtype": e.get("input_dtypes"), "stack": _trim(e.get("frames", []))}
                                        for e in new]})

    data = torch.utils.data.DataLoader(torch.randn(16, 4), batch_size=2)
    ckpt = ModelCheckpoint(dirpath=CKPT_DIR, filename=tag + "-{epoch}", monitor="val_loss", save_top_k=1)
    stop = EarlyStopping(monitor="val_loss", patience=3)
    trainer = pl.Trainer(accelerator="cpu", devices=world, strategy="ddp", max_epochs=2, callbacks=[ckpt, stop, Watch()],
                         enable_progress_bar=False, logger=False, enable_model_summary=False, num_sanity_val_steps=0,
                         default_root_dir=CKPT_DIR)
    _mark_seen()
    trainer.fit(Module(), data, data)
    new = [e for e in fr_entries() if e["record_id"] not in _SEEN]
    RESULTS.append({"probe": f"{tag}: whole fit (2 epochs, 8 batches each, validation, ModelCheckpoint, EarlyStopping), remaining ops",
                    "note": "every entry not attributed to a probe above; stacks show the framework frames", "error": None,
                    "ops": [{"op": e["profiling_name"], "pg": list(e.get("process_group", [])), "in": e.get("input_sizes"),
                             "out": e.get("output_sizes"), "dtype": e.get("input_dtypes"), "stack": _trim(e.get("frames", []))}
                            for e in new]})
    _SEEN.update(e["record_id"] for e in new)


# ------------------------------------------------------------------------ Lightning Fabric

def fabric_probes(rank: int, world: int) -> None:
    from lightning.fabric import Fabric

    fabric = Fabric(accelerator="cpu", devices=world, strategy="ddp")
    probe("fabric.launch()", lambda: fabric.launch())
    t = torch.ones(2)
    probe("fabric.all_reduce(tensor, reduce_op='mean')", lambda: fabric.all_reduce(t.clone(), reduce_op="mean"))
    probe("fabric.all_gather(tensor)", lambda: fabric.all_gather(t))
    probe("fabric.barrier()", lambda: fabric.barrier())
    probe("fabric.broadcast(obj)", lambda: fabric.broadcast({"k": 1}))
    holder = {}
    probe("fabric.setup(model, optimizer)", lambda: holder.update(zip(("m", "o"), fabric.setup(
        torch.nn.Linear(4, 1), torch.optim.SGD(torch.nn.Linear(4, 1).parameters(), lr=0.1)))))
    probe("fabric.save(path, state)", lambda: fabric.save(os.path.join(CKPT_DIR, "fabric.ckpt"), {"model": holder["m"]}))
    probe("fabric.load(path, state)", lambda: fabric.load(os.path.join(CKPT_DIR, "fabric.ckpt"), {"model": holder["m"]}))


# ------------------------------------------------------------------------ Accelerate

def accelerate_probes(rank: int, world: int) -> None:
    from accelerate import Accelerator, PartialState
    from accelerate.utils import broadcast, broadcast_object_list, gather, gather_object, reduce

    holder = {}
    probe("Accelerator(cpu=True) construction", lambda: holder.setdefault("acc", Accelerator(cpu=True)))
    acc = holder["acc"]
    t = torch.ones(3) * (rank + 1)
    probe("accelerator.gather(tensor)", lambda: acc.gather(t))
    probe("accelerate.utils.gather(dict)", lambda: gather({"a": t, "b": torch.ones(1)}))
    probe("accelerator.gather_for_metrics(tensor) outside a prepared loader", lambda: acc.gather_for_metrics(t))
    probe("accelerate.utils.gather_object(list)", lambda: gather_object([rank]))
    probe("accelerator.reduce(tensor, 'sum')", lambda: acc.reduce(t.clone(), reduction="sum"))
    probe("accelerator.reduce(tensor, 'mean')", lambda: acc.reduce(t.clone(), reduction="mean"))
    probe("accelerator.pad_across_processes(tensor)", lambda: acc.pad_across_processes(torch.ones(rank + 1)))
    probe("accelerator.wait_for_everyone()", lambda: acc.wait_for_everyone())
    probe("accelerate.utils.broadcast(tensor)", lambda: broadcast(t.clone(), from_process=0))
    probe("accelerate.utils.broadcast_object_list(list)", lambda: broadcast_object_list([rank], from_process=0))
    probe("accelerate.utils.reduce(tensor)", lambda: reduce(t.clone()))

    def main_first():
        with acc.main_process_first():
            pass
    probe("with accelerator.main_process_first()", main_first)

    def split():
        with acc.split_between_processes(list(range(5)), apply_padding=True):
            pass
    probe("with accelerator.split_between_processes(...)", split)
    probe("PartialState().wait_for_everyone()", lambda: PartialState().wait_for_everyone())

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=2, shuffle=True)
    prepared = {}
    probe("accelerator.prepare(model, optimizer, dataloader)",
          lambda: prepared.update(zip(("m", "o", "l"), acc.prepare(model, opt, loader))))
    m, o, loader_p = prepared["m"], prepared["o"], prepared["l"]
    it = {}
    probe("iter(prepared dataloader) (epoch start)", lambda: it.setdefault("it", iter(loader_p)))
    probe("next(prepared dataloader) (first batch)", lambda: it.setdefault("b", next(it["it"])))
    batch = it["b"]

    def step():
        loss = m(batch).pow(2).mean()
        acc.backward(loss)
        o.step()
        o.zero_grad()
    probe("accelerator.backward + optimizer.step (DDP)", step)
    probe("accelerator.gather_for_metrics(tensor) inside a prepared loader", lambda: acc.gather_for_metrics(torch.ones(2)))
    probe("next(prepared dataloader) (next batches, to the end)", lambda: [b for b in it["it"]])
    probe("accelerator.save_state(dir)", lambda: acc.save_state(os.path.join(CKPT_DIR, "acc-state")))
    probe("accelerator.get_state_dict(model)", lambda: acc.get_state_dict(m))
    probe("accelerator.save_model(model, dir)", lambda: acc.save_model(m, os.path.join(CKPT_DIR, "acc-model")))


CKPT_DIR = ""


def main() -> None:
    global CKPT_DIR
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "fr_api_probe.json")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    base = Path(tempfile.gettempdir()) / f"fr-probe-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}"
    CKPT_DIR = str(base)
    base.mkdir(parents=True, exist_ok=True)
    sections = os.environ.get("PROBE_SECTIONS", "torch,ddp,fsdp,dtensor,lightning,pl,fabric,accelerate").split(",")
    if "torch" in sections:
        torch_probes(rank, world)
    if "ddp" in sections:
        ddp_probes(rank, world)
    if "fsdp" in sections:
        fsdp_probes(rank, world)
    if "dtensor" in sections:
        dtensor_probes(rank, world)
    if "lightning" in sections:
        lightning_probes(rank, world, "lightning")
    if "pl" in sections:
        lightning_probes(rank, world, "pytorch_lightning")
    if "fabric" in sections:
        fabric_probes(rank, world)
    if "accelerate" in sections:
        accelerate_probes(rank, world)
    if rank == 0:
        import importlib.metadata as md

        versions = {}
        for pkg in ("torch", "pytorch-lightning", "lightning", "accelerate"):
            try:
                versions[pkg] = md.version(pkg)
            except md.PackageNotFoundError:
                versions[pkg] = None
        out.write_text(json.dumps({"backend": "gloo", "world_size": world, "versions": versions,
                                   "probes": RESULTS}, indent=1) + "\n")
        print(f"wrote {len(RESULTS)} probes to {out}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
