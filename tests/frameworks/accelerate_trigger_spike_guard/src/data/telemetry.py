"""Per-process shards of fleet telemetry.

Each process reads the export of one data centre. Data centre 3's export was taken while a
unit-conversion bug was live: from row 384 on its targets are in milliwatts, not watts.
"""

import torch
from torch.utils.data import TensorDataset

MILLIWATT_ROWS_FROM = {3: 384}


def telemetry_shard(index: int, rows: int, features: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed * 31 + index)
    x = torch.randn(rows, features, generator=g)
    w = torch.linspace(-0.5, 0.5, features)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(rows, 1, generator=g)
    start = MILLIWATT_ROWS_FROM.get(index)
    if start is not None:
        y[start:] *= 1000.0
    return TensorDataset(x, y)
