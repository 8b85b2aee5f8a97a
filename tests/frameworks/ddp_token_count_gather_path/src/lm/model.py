"""A tiny causal MLP-mixer LM (no buffers, CPU friendly)."""

import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, context: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(context, dim))
        self.mix = nn.Linear(context, context, bias=False)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        n = ids.shape[1]
        causal = torch.tril(torch.ones(n, n))
        w = self.mix.weight[:n, :n] * causal
        x = x + torch.einsum("ts,bsd->btd", w, x)
        x = x + self.ff(x)
        return self.head(x)
