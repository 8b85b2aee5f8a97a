# expect: DSY007 at line 30
# expect: DSY007 at line 39
# expect: DSY007 at line 51
# expect: DSY007 at line 64
# expect: DSY007 at line 77
# expect: DSY007 at line 97
# expect: DSY007 at line 109
"""Resume code that asks every rank whether a file exists, but reads it on one rank only and
broadcasts what it read: a rank whose view of the file system differs (a node-local disk, a
shared file system's cached attributes, a file rank 0 wrote a moment ago) takes the other way
and its peers wait in the broadcast, or, where the test decides an early exit, in the
collective after it."""
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


class Resumer:
    def __init__(self, run_dir):
        self.run_dir = Path(run_dir)

    def latest(self):
        return self.run_dir / "checkpoints" / "latest"

    def restore_scheduler(self, scheduler):
        state_path = os.path.join(str(self.latest()), "scheduler.pt")
        if os.path.isfile(state_path):
            box = [None]
            if dist.get_rank() == 0:
                box[0] = torch.load(state_path, map_location="cpu")
            dist.broadcast_object_list(box, src=0)
            scheduler.load_state_dict(box[0])

    def restore_counters(self):
        counters = self.latest() / "counters.json"
        if not counters.exists():
            return {"step": 0}
        else:
            payload = [None]
            if dist.get_rank() == 0:
                payload[0] = json.loads(counters.read_text())
            dist.broadcast_object_list(payload, src=0)
            return payload[0]

    def restore_rng(self, src=0):
        rng_file = self.latest() / "rng.pt"
        rank = dist.get_rank()
        if not rng_file.is_file():
            torch.manual_seed(1234)
        elif rng_file.exists():
            state = torch.empty(5056, dtype=torch.uint8)
            if rank == src:
                with open(rng_file, "rb") as f:
                    state = torch.load(f)
            dist.broadcast(state, src=src)
            torch.set_rng_state(state)


def restore_step(run_dir):
    step_file = os.path.join(run_dir, "step.txt")
    if not os.path.exists(step_file):
        return 0
    step = torch.zeros(1, dtype=torch.long)
    if dist.get_rank() == 0:
        with open(step_file) as f:
            step[0] = int(f.read())
    dist.broadcast(step, src=0)
    return int(step.item())


def replay(shards):
    for shard in shards:
        marker = shard + ".done"
        if os.path.exists(marker):
            continue
        flag = [None]
        if dist.get_rank() == 0:
            flag[0] = open(marker).read() if os.path.isfile(marker + ".tmp") else None
        dist.broadcast_object_list(flag, src=0)


def _read_state(p):
    with open(p, "rb") as f:
        return torch.load(f)


class Loader:
    def _load(self, where):
        return _read_state(where)

    def resume(self, ckpt_dir):
        # The read is two project calls down: self._load -> _read_state -> open.
        meta = os.path.join(ckpt_dir, "meta.pt")
        if os.path.exists(meta):
            obj = [None]
            if dist.get_rank() == 0:
                obj[0] = self._load(meta)
            dist.broadcast_object_list(obj, src=0)
            return obj[0]
        return None


def restore_optimizer(optimizer, root):
    # The same file spelled through wrappers: `Path(root) / ...`, `.resolve()`, `os.fspath`.
    state_file = Path(root) / "optimizer.pt"
    if state_file.resolve().is_file():
        box = [None]
        if dist.get_rank() == 0:
            box[0] = torch.load(os.fspath(state_file), map_location="cpu")
        dist.broadcast_object_list(box, src=0)
        optimizer.load_state_dict(box[0])
