"""Smart-meter readings: features of a household-hour, target = consumption (kWh).

Replica r reads meter export r. Both stages of a replica read the same export: stage 0
takes the features, the last stage the targets (cleaned: a meter overflow is no label).
"""

import math

import torch

# export 1 has a meter that reported an overflow (inf) for one hour
OVERFLOWS = {1: [37]}


def load_export(replica: int, rows: int, features: int, seed: int):
    g = torch.Generator().manual_seed(seed * 10 + replica)
    x = torch.randn(rows, features, generator=g)
    w = torch.linspace(-1, 1, features)
    y = (x @ w).tanh() * 2 + 3 + 0.1 * torch.randn(rows, generator=g)
    for row in OVERFLOWS.get(replica, []):
        y[row] = math.inf
    return x, y


def clean_labels(y: torch.Tensor) -> torch.Tensor:
    return y[torch.isfinite(y)]


def batches(replica: int, steps: int, batch: int, features: int, seed: int):
    x, y = load_export(replica, steps * batch, features, seed)
    for i in range(steps):
        yield x[i * batch:(i + 1) * batch], clean_labels(y[i * batch:(i + 1) * batch])
