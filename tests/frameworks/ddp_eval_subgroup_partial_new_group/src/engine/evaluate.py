"""Holdout accuracy, split over the evaluating ranks."""

import torch
import torch.distributed as dist

from comm.groups import eval_group
from data.churn import holdout_part


@torch.no_grad()
def holdout_accuracy(model, cfg, rank: int) -> float:
    x, y = holdout_part(cfg, rank).tensors
    stats = torch.tensor([((model(x) > 0).float() == y).sum().item(), float(y.numel())])
    dist.all_reduce(stats, group=eval_group(cfg.eval_ranks))
    return (stats[0] / stats[1]).item()
