"""Synthetic wafer inspection features: 24 summary statistics of a wafer map, one label.

Defect classes are imbalanced the way fab data are: most wafers are clean, scratches are rare.
"""

import torch
from torch.utils.data import TensorDataset

CLASSES = ["clean", "particle", "residue", "pattern_shift", "scratch"]
PRIOR = torch.tensor([0.55, 0.20, 0.15, 0.08, 0.02])


def inspection_set(wafers: int, features: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    labels = torch.multinomial(PRIOR, wafers, replacement=True, generator=g)
    centers = torch.randn(len(CLASSES), features, generator=g) * 1.5
    x = centers[labels] + torch.randn(wafers, features, generator=g)
    return TensorDataset(x, labels)
