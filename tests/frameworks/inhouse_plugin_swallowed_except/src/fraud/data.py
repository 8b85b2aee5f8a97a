"""Card transactions, one merchant region per rank; label 1 = a chargeback was filed."""

import torch
from torch.utils.data import DataLoader, TensorDataset

# chargebacks per 1,000 transactions by region; region 1 (rank 1) had a quiet stretch
FRAUD_RATE = {0: 40, 1: 40, 2: 40, 3: 40}
QUIET = {1: range(128, 256)}  # rows with no chargebacks filed yet


def region_loader(region: int, rows: int, batch: int, features: int, seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed * 10 + region)
    x = torch.randn(rows, features, generator=g)
    y = (torch.rand(rows, generator=g) < FRAUD_RATE[region] / 1000).float()
    y[(x[:, 0] > 1.8) & (x[:, 1] > 0.5)] = 1.0
    for row in QUIET.get(region, []):
        y[row] = 0.0
    return DataLoader(TensorDataset(x, y), batch_size=batch, shuffle=False)
