"""Watches the mean predicted CTR across all ranks for drift."""

import torch
import torch.distributed as dist


class PredictionDrift:
    def __init__(self, world_size: int):
        self.world_size = world_size
        self.window = []

    def observe(self, logits: torch.Tensor) -> None:
        self.window.append(torch.sigmoid(logits.detach()).mean())

    def report(self) -> torch.Tensor:
        means = torch.stack(self.window)
        self.window.clear()
        dist.all_reduce(means)
        return means / self.world_size
