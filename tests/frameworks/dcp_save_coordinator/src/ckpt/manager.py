"""Sharded checkpoints with torch.distributed.checkpoint (one directory per step)."""

import os

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict


class CheckpointManager:
    def __init__(self, root: str, every: int):
        self.root = root
        self.every = every

    @property
    def is_coordinator(self) -> bool:
        return dist.get_rank() == 0

    def maybe_save(self, model, optimizer, step: int) -> None:
        if step % self.every != 0:
            return
        if self.is_coordinator:
            model_state, optim_state = get_state_dict(model, optimizer)
            path = os.path.join(self.root, f"step_{step:06d}")
            dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=path)
            print(f"step {step}: checkpoint saved to {path}", flush=True)
