"""Ticket router: a bag-of-words body encoder, plus account metadata when the ticket has it."""

import torch
from torch import nn


class TicketRouter(nn.Module):
    def __init__(self, vocab: int, meta_features: int, d_model: int, n_queues: int):
        super().__init__()
        self.body = nn.EmbeddingBag(vocab, d_model, mode="mean")
        self.meta = nn.Sequential(nn.Linear(meta_features, d_model), nn.ReLU(),
                                  nn.Linear(d_model, d_model))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_queues)

    def forward(self, tokens, meta, has_meta):
        h = self.body(tokens)
        if has_meta.any():  # skip the metadata tower when no ticket in the batch has any
            h = h + self.meta(meta) * has_meta[:, None]
        return self.head(self.norm(h))
