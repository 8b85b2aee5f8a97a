"""A small MLP scorer with batch normalisation on the raw features."""

from torch import nn


class FraudScorer(nn.Module):
    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.norm = nn.BatchNorm1d(features)
        self.mlp = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.mlp(self.norm(x)).squeeze(-1)
