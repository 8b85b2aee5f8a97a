import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Regressor(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.ff1 = FeedForward(dim, hidden)
        self.ff2 = FeedForward(dim, hidden)
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        x = x + self.ff1(x)
        x = x + self.ff2(x)
        return self.head(x)
