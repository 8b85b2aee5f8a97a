"""Vibration/pressure windows from the pump fleet; each rank reads its own pumps."""

import math

import torch
from torch.utils.data import DataLoader, TensorDataset


def pump_windows(rank: int, cfg) -> TensorDataset:
    g = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    n, t = cfg.windows_per_rank, torch.arange(cfg.window).float()
    faults = torch.randint(0, cfg.faults, (n,), generator=g)
    freq = 0.15 + 0.1 * faults.float().unsqueeze(1)          # each fault shifts the resonance
    phase = torch.rand(n, cfg.channels, 1, generator=g) * 2 * math.pi
    x = torch.sin(freq.unsqueeze(1) * t + phase) + 0.3 * torch.randn(n, cfg.channels, cfg.window,
                                                                     generator=g)
    return TensorDataset(x.flatten(1), faults)


def loader(rank: int, cfg, shuffle: bool = True) -> DataLoader:
    g = torch.Generator().manual_seed(cfg.seed + rank)
    return DataLoader(pump_windows(rank, cfg), batch_size=cfg.batch, shuffle=shuffle, generator=g)
