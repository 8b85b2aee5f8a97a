"""Accelerometer windows from the pump fleet; each rank reads the pump numbered like its rank.

Rows carry a `valid` flag: the ingest marks readings taken during maintenance as invalid.
"""

import torch

# (pump, first row, last row) of maintenance windows in the export
MAINTENANCE = [(6, 32, 47), (2, 100, 104)]


def pump_batches(pump: int, steps: int, batch: int, channels: int, window: int, seed: int):
    g = torch.Generator().manual_seed(seed * 100 + pump)
    rows = steps * batch
    x = torch.randn(rows, channels, window, generator=g)
    y = (x.pow(2).mean(dim=(1, 2)) > 1.05).float()
    valid = torch.ones(rows, dtype=torch.bool)
    for p, first, last in MAINTENANCE:
        if p == pump:
            valid[first:last + 1] = False
    for i in range(steps):
        s = slice(i * batch, (i + 1) * batch)
        yield x[s], y[s], valid[s]
