import torch
from torch import nn


class BagOfTokens(nn.Module):
    """Mean of token embeddings, then a two-layer head."""

    def __init__(self, vocab: int, dim: int, classes: int):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, classes))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(tokens))
