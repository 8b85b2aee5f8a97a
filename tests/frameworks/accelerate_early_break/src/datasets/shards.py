"""Per-process shards of the calibration data lake.

Shards come from different rigs; shard 1 is the simulator's output (no sensor noise).
"""

import torch
from torch.utils.data import TensorDataset

RIG_NOISE = {0: 0.5, 1: 0.0, 2: 0.5, 3: 0.5}


def calibration_shard(index: int, rows: int, features: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed * 100 + index)
    x = torch.randn(rows, features, generator=g)
    w = torch.linspace(-1, 1, features)
    y = (x @ w).unsqueeze(1) + RIG_NOISE[index % len(RIG_NOISE)] * torch.randn(rows, 1, generator=g)
    return TensorDataset(x, y)
