from torch import nn


class Scorer(nn.Module):
    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)
