"""Partial similarity tables: each rank scores the candidates against the shared anchors."""

import torch

from comm.collectives import sum_and_shard


class NegativeTable:
    def __init__(self, encoder, anchors: torch.Tensor, pool):
        self.encoder = encoder
        self.anchors = anchors
        self.pool = pool

    def build(self, doc_ids: torch.Tensor) -> torch.Tensor:
        distinct, rows = self.pool.collect(doc_ids)
        table = torch.zeros(rows, self.anchors.shape[0])
        emb = self.encoder(distinct.float().unsqueeze(-1) / 4096.0)
        table[: distinct.numel()] = emb @ self.anchors.T
        # every rank owns a slice of the summed table: its hardest negatives come from there
        return sum_and_shard(table.detach())
