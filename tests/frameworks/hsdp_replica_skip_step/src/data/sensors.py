"""Sensor readings: each replica reads its own plant's export, split between its shard ranks."""

import torch

# plant 1's export has a saturated sensor (inf) in one row
SATURATED_PLANT, SATURATED_ROW = 1, 37


def plant_batches(replica: int, shard: int, num_shards: int, cfg):
    g = torch.Generator().manual_seed(cfg.seed * 17 + replica)
    n = cfg.steps * cfg.batch * num_shards
    x = torch.randn(n, cfg.features, generator=g)
    y = x[:, :3].sum(-1) + 0.1 * torch.randn(n, generator=g)
    if replica == SATURATED_PLANT:
        y[SATURATED_ROW * num_shards] = float("inf")
    x, y = x[shard::num_shards], y[shard::num_shards]
    for i in range(cfg.steps):
        sl = slice(i * cfg.batch, (i + 1) * cfg.batch)
        yield x[sl], y[sl]
