"""Demand response to price, per market. Each rank trains and validates on its own market.

The two EU markets (ranks 0 and 1) were re-priced last quarter: their validation window
already follows the new response, their training window does not.
"""

import torch
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 8
MARKETS = ["eu-west", "eu-north", "us-east", "us-west"]
REPRICED = {"eu-west", "eu-north"}


def _window(rows: int, seed: int, repriced: bool) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, FEATURES, generator=g)
    w = torch.linspace(0.5, -0.5, FEATURES)
    if repriced:
        w = -w
    return TensorDataset(x, (x @ w).unsqueeze(1) + 0.05 * torch.randn(rows, 1, generator=g))


def market_loaders(rank: int, train_rows: int, val_rows: int, batch_size: int, seed: int):
    market = MARKETS[rank % len(MARKETS)]
    train = _window(train_rows, seed * 10 + rank, repriced=False)
    val = _window(val_rows, seed * 10 + rank + 5, repriced=market in REPRICED)
    return (DataLoader(train, batch_size=batch_size, shuffle=True),
            DataLoader(val, batch_size=batch_size), market)
