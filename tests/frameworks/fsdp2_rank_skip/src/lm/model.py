"""A tiny next-token model: embedding, residual MLP blocks, tied output head."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.ff(self.norm(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(layers))
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.out(x)
