"""A bigram language model: the smallest thing that still learns from a token stream."""

import torch


class Bigram(torch.nn.Module):
    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(self.embed(tokens))
