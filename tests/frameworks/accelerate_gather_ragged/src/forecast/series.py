"""Hourly load curves: a daily cycle, a trend and noise; target = the next hour."""

import math

import torch


def load_curves(count: int, lookback: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    hours = torch.arange(lookback + 1).float()
    phase = torch.rand(count, 1, generator=g) * 24
    level = 1 + torch.rand(count, 1, generator=g)
    curves = level * (1 + 0.3 * torch.sin(2 * math.pi * (hours + phase) / 24))
    curves = curves + 0.02 * torch.randn(curves.shape, generator=g)
    return curves[:, :-1], curves[:, -1:]


def holdout_shard(series, targets, index: int, count: int):
    """This process's slice of the holdout: every count-th series, starting at index."""
    return series[index::count], targets[index::count]
