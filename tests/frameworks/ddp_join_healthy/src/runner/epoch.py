"""Training epochs that tolerate uneven inputs across ranks (DDP's join context)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def run_epoch(model, optimizer, loader) -> torch.Tensor:
    stats = torch.zeros(2)
    # Ranks that run out of batches early keep shadowing the others' all_reduces.
    with model.join():
        for x, y in loader:
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            stats += torch.tensor([loss.item() * len(x), len(x)])
    dist.all_reduce(stats)
    return stats
