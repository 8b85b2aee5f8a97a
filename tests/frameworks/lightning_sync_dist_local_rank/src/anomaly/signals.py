"""Vibration windows: a few harmonics plus sensor noise."""

import math

import torch
from torch.utils.data import TensorDataset


def vibration_windows(count: int, length: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(length) / length
    freq = torch.randint(1, 4, (count, 1), generator=g).float()
    phase = torch.rand(count, 1, generator=g) * 2 * math.pi
    x = torch.sin(2 * math.pi * freq * t + phase) + 0.05 * torch.randn(count, length, generator=g)
    return TensorDataset(x)
