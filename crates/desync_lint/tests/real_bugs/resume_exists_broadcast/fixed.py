"""Checkpoint manager of an FSDP/DCP training stack: resume the scalar training state.

Rank 0 alone looks at the file system and reads `train_state.pt`; the broadcast carries
either the state or None, so every rank joins the same broadcast.
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
        box = [str(ckpt) if ckpt is not None else None]
        dist.broadcast_object_list(box, src=0)
        if box[0] is None:
            return 0
        ckpt = Path(box[0])
        dcp.load(state, checkpoint_id=str(ckpt))
        box = [None]
        if dist.get_rank() == 0:
            train_state_path = ckpt / "train_state.pt"
            if train_state_path.exists():
                box[0] = torch.load(train_state_path, weights_only=False)
        dist.broadcast_object_list(box, src=0)
        if box[0] is None:
            return 0
        torch.set_rng_state(box[0]["rng"])
        return box[0]["step"]
