"""Checkpoint manager of an FSDP/DCP training stack: resume the scalar training state.

Model and optimizer shards come back through torch.distributed.checkpoint; the scalar
train state (step, tokens seen, RNG) lives in one `train_state.pt` that rank 0 reads and
broadcasts. Each rank tests on its own whether that file exists. On NFS or Lustre with
attribute caching, a rank can miss a file rank 0 just wrote, skip the broadcast and leave
its peers waiting in broadcast_object_list.
"""
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


class CheckpointManager:
    def __init__(self, root):
        self.root = Path(root)

    def latest(self):
        link = self.root / "latest"
        return link.resolve() if link.exists() else None

    def load(self, state):
        ckpt = self.latest()
        if ckpt is None:
            return 0
        dcp.load(state, checkpoint_id=str(ckpt))
        train_state_path = ckpt / "train_state.pt"
        step = 0
        if train_state_path.exists():  # BUG: a per-rank filesystem check decides who joins the broadcast
            box = [None]
            if dist.get_rank() == 0:
                box[0] = torch.load(train_state_path, weights_only=False)
            dist.broadcast_object_list(box, src=0)
            step = box[0]["step"]
            torch.set_rng_state(box[0]["rng"])
        return step
