"""Click-through-rate model over hashed categorical features."""

import torch
from torch import nn

FIELDS, BUCKETS = 6, 97


class CTRModel(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.embed = nn.EmbeddingBag(FIELDS * BUCKETS, dim, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 1))
        self.register_buffer("offsets", torch.arange(FIELDS) * BUCKETS, persistent=False)

    def forward(self, ids):
        return self.mlp(self.embed(ids + self.offsets)).squeeze(-1)


def impressions(batch: int, generator: torch.Generator):
    ids = torch.randint(0, BUCKETS, (batch, FIELDS), generator=generator)
    clicked = ((ids[:, 0] + ids[:, 3]) % 5 == 0).float()
    return ids, clicked
