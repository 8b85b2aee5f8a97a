"""User and item towers; the score is their dot product."""

import torch
from torch import nn


class TwoTower(nn.Module):
    def __init__(self, users: int, items: int, dim: int):
        super().__init__()
        self.user = nn.Sequential(nn.Embedding(users, dim), nn.Linear(dim, dim))
        self.item = nn.Sequential(nn.Embedding(items, dim), nn.Linear(dim, dim))

    def forward(self, user_ids: torch.Tensor, item_ids: torch.Tensor) -> torch.Tensor:
        return (self.user(user_ids) * self.item(item_ids)).sum(-1)
