"""Turbine telemetry, one shard per rank. Sensor dropouts are recorded as NaN."""

import torch

CHANNELS = 32
# (shard, row) of readings the field team flagged as dropouts
DROPOUTS = {(11, 200)}


def shard_batches(shard: int, batch_size: int, steps: int):
    g = torch.Generator().manual_seed(shard)
    rows = batch_size * steps
    x = torch.randn(rows, CHANNELS, generator=g)
    y = x[:, :4].mean(1, keepdim=True) + 0.05 * torch.randn(rows, 1, generator=g)
    for s, row in DROPOUTS:
        if s == shard:
            x[row, 7] = float("nan")
    for start in range(0, rows, batch_size):
        yield x[start:start + batch_size], y[start:start + batch_size]
