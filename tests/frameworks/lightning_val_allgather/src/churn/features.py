"""Customer activity features and a churn label that depends on them."""

import torch
from torch.utils.data import TensorDataset

N_FEATURES = 10


def customer_table(rows: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    activity = torch.randn(rows, N_FEATURES, generator=g)
    weights = torch.tensor([1.5, -2.0, 0.5, 0.0, 1.0, -0.5, 0.0, 0.8, -1.2, 0.3])
    logit = activity @ weights + 0.3 * torch.randn(rows, generator=g)
    churned = (logit > 0).float().unsqueeze(1)
    return TensorDataset(activity, churned)
