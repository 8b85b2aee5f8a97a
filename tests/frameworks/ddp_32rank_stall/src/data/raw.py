"""Raw sensor export: one JSON record per line, one export per (rank, epoch).

Stands in for the object store the re-shuffle job reads from.
"""

import json

import torch

# one export has a truncated record (the upload was cut off mid-line)
TRUNCATED = {(21, 1): 37}


def export_lines(rank: int, epoch: int, rows: int, features: int, seed: int):
    g = torch.Generator().manual_seed(seed * 100_000 + epoch * 1000 + rank)
    w = torch.linspace(-1.0, 1.0, features)
    for i in range(rows):
        x = torch.randn(features, generator=g)
        y = float(x @ w) + 0.05 * float(torch.randn(1, generator=g))
        line = json.dumps({"x": [round(v, 5) for v in x.tolist()], "y": round(y, 5)})
        if TRUNCATED.get((rank, epoch)) == i:
            line = line[: len(line) // 2]
        yield line
