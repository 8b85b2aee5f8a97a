"""Sparse-autoencoder trainer: one SAE per hooked layer, trained under DDP.

`save()` writes on rank 0 only, and every rank reaches the barrier that follows.
"""
import os
from pathlib import Path

import torch
import torch.distributed as dist


class SaeTrainer:
    def __init__(self, saes, cfg):
        self.saes = saes  # {layer name: nn.Module}
        self.cfg = cfg
        self.global_step = 0

    @property
    def rank(self):
        return dist.get_rank() if dist.is_initialized() else 0

    def reduce_losses(self, losses):
        total = torch.stack(list(losses.values())).detach()
        if dist.is_initialized():
            dist.all_reduce(total, op=dist.ReduceOp.AVG)
        return total

    def fit(self, batches):
        for batch in batches:
            losses = {name: sae(batch[name]).loss for name, sae in self.saes.items()}
            sum(losses.values()).backward()
            self.reduce_losses(losses)
            self.global_step += 1
            if self.global_step % self.cfg.save_every == 0:
                self.save()

    def save(self):
        if self.rank == 0:
            root = Path(self.cfg.run_name)
            for name, sae in self.saes.items():
                os.makedirs(root / name, exist_ok=True)
                torch.save(sae.state_dict(), root / name / "sae.pt")
        if dist.is_initialized():
            dist.barrier()
