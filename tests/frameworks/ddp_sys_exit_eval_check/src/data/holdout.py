"""Per-rank holdout shards, read fresh at every evaluation (the export is refreshed hourly).

Labels must be 0 or 1; region 2's export for the second evaluation window carries a
sentinel -1 label for accounts that were merged.
"""

import torch

from common.errors import abort

SENTINEL_FROM_WINDOW = {2: 2}


def load_window(rank: int, window: int, features: int, seed: int):
    g = torch.Generator().manual_seed(seed * 1000 + rank * 10 + window)
    x = torch.randn(64, features, generator=g)
    y = (x[:, 0] > 0).float()
    if SENTINEL_FROM_WINDOW.get(rank % 4, 99) <= window:
        y[5] = -1.0
    check_labels(y, rank, window)
    return x, y


def check_labels(y: torch.Tensor, rank: int, window: int):
    bad = ((y != 0) & (y != 1)).nonzero().flatten()
    if len(bad):
        abort(f"rank {rank}: holdout window {window} has {len(bad)} invalid labels")
