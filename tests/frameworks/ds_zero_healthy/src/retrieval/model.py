"""Bag-of-embeddings intent classifier."""

import torch
from torch import nn


class IntentClassifier(nn.Module):
    def __init__(self, vocab: int, d_embed: int, d_hidden: int, n_intents: int):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, d_embed, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(d_embed, d_hidden), nn.GELU(),
                                 nn.LayerNorm(d_hidden), nn.Linear(d_hidden, n_intents))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.embed(tokens))
