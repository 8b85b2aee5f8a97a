"""Holdout accuracy, averaged over ranks."""

import torch
import torch.distributed as dist

from data.holdout import load_window


@torch.no_grad()
def holdout_accuracy(model, rank, window, features, seed):
    x, y = load_window(rank, window, features, seed)
    correct = ((model(x).squeeze(1) > 0).float() == y).float().sum()
    stats = torch.stack([correct, torch.tensor(float(len(y)))])
    dist.all_reduce(stats)
    return (stats[0] / stats[1]).item()
