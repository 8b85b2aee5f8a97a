"""Customer activity features with a churn label."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def table(n: int, features: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    y = ((x[:, 0] - 0.5 * x[:, 1] + 0.3 * torch.randn(n, generator=g)) > 0.4).float()
    return TensorDataset(x, y)


def train_loader(cfg, rank: int) -> DataLoader:
    return DataLoader(table(cfg.rows_per_rank, cfg.features, cfg.seed + rank),
                      batch_size=cfg.batch_size, shuffle=True, drop_last=True)


def holdout_part(cfg, rank: int) -> TensorDataset:
    full = table(cfg.holdout_rows, cfg.features, cfg.seed + 1000)
    per = cfg.holdout_rows // cfg.eval_ranks
    return TensorDataset(*(t[rank * per:(rank + 1) * per] for t in full.tensors))
