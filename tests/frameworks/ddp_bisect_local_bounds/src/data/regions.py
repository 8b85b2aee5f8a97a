"""Per-region data: training batches and the upstream scorer's risk scores.

Each rank serves one region (rank % 4). Region 3's upstream scorer runs with a calibrated
temperature, so its scores sit in a narrow band around 0.5.
"""

import torch

SCORE_TEMPERATURE = {0: 1.0, 1: 1.0, 2: 1.0, 3: 0.12}


def risk_scores(rank: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed * 17 + rank)
    return torch.sigmoid(torch.randn(400, generator=g) * 2.0 * SCORE_TEMPERATURE[rank % 4])


def batch(g: torch.Generator, features: int):
    x = torch.randn(32, features, generator=g)
    return x, (x[:, :1] - x[:, 1:2] > 0.5).float()
