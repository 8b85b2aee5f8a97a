"""Two-tower-ish CTR model. User id `known_users` is the shared cold-start slot."""

import torch
from torch import nn


class CTRModel(nn.Module):
    def __init__(self, known_users: int, items: int, dim: int):
        super().__init__()
        self.users = nn.Embedding(known_users + 1, dim)
        self.items = nn.Embedding(items, dim)
        self.head = nn.Sequential(nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, user, item):
        z = torch.cat([self.users(user), self.items(item)], dim=-1)
        return self.head(z).squeeze(-1)
