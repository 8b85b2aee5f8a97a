"""Meter readings per site. Sites have different amounts of history, so shards are uneven."""

import torch
from torch.utils.data import DataLoader, TensorDataset

SITE_READINGS = [320, 352, 384, 416]  # rows per site; one site per rank
FEATURES = 9


def site_loader(rank: int, batch_size: int) -> DataLoader:
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(SITE_READINGS[rank], FEATURES, generator=g)
    y = x[:, :3].sum(1, keepdim=True) + 0.1 * torch.randn(SITE_READINGS[rank], 1, generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, generator=g)
