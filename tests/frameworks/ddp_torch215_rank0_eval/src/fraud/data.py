"""Card transactions (amount, merchant mix, velocity features) with a fraud label."""

import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def transactions(n: int, features: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g)
    w = torch.linspace(-1.0, 1.5, features)
    logit = x @ w + 0.8 * x[:, 0] * x[:, 1] - 1.5
    y = (torch.rand(n, generator=g) < torch.sigmoid(logit)).float()
    return TensorDataset(x, y)


def loaders(cfg, rank: int, world: int):
    train = transactions(cfg.train_per_rank * world, cfg.features, cfg.seed)
    holdout = transactions(cfg.holdout_per_rank * world, cfg.features, cfg.seed + 1)
    train_sampler = DistributedSampler(train, num_replicas=world, rank=rank, seed=cfg.seed)
    holdout_sampler = DistributedSampler(holdout, num_replicas=world, rank=rank, shuffle=False)
    return (DataLoader(train, batch_size=cfg.batch_size, sampler=train_sampler, drop_last=True),
            DataLoader(holdout, batch_size=cfg.batch_size, sampler=holdout_sampler),
            train_sampler)
