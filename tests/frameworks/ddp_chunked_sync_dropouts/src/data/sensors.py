"""Per-site sensor logs: each rank reads its own site's log.

A site's log has training windows (features -> next-hour load) and, per epoch, a column of
drift readings (calibration offsets) the job monitors across sites.
"""

import math

import torch

# site 2's drift sensor dropped out (NaN) for one hour in epoch 1
DROPOUTS = {2: {1: [40]}}


def training_windows(site: int, epoch: int, steps: int, batch: int, features: int, seed: int):
    g = torch.Generator().manual_seed(seed * 1000 + site * 10 + epoch)
    x = torch.randn(steps * batch, features, generator=g)
    y = x[:, :1].sin() + 0.05 * torch.randn(steps * batch, 1, generator=g)
    return [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]) for i in range(steps)]


def drift_readings(site: int, epoch: int, count: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed * 7919 + site * 31 + epoch)
    readings = 0.02 * torch.randn(count, generator=g)
    for hour in DROPOUTS.get(site, {}).get(epoch, []):
        readings[hour] = math.nan
    return readings


def valid(readings: torch.Tensor) -> torch.Tensor:
    """A dropout is no reading."""
    return readings[~torch.isnan(readings)]
