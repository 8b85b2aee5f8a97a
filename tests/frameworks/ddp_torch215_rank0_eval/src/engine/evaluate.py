"""Holdout metrics, summed over every rank's part of the holdout set."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


@torch.no_grad()
def evaluate(model, loader) -> dict:
    model.eval()
    stats = torch.zeros(3)  # loss sum, correct, count
    for x, y in loader:
        logits = model(x)
        stats += torch.tensor([F.binary_cross_entropy_with_logits(logits, y, reduction="sum").item(),
                               ((logits > 0).float() == y).sum().item(), y.numel()])
    dist.all_reduce(stats)
    model.train()
    return {"loss": (stats[0] / stats[2]).item(), "acc": (stats[1] / stats[2]).item()}
