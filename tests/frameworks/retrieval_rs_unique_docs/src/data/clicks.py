"""Click logs: each rank reads its own day of (query, clicked document) pairs."""

import torch

# a crawler bug duplicated one session on day 2: the same few documents over and over
DUPLICATED_DAY = 2


def _day(rank: int, cfg):
    g = torch.Generator().manual_seed(cfg.seed * 31 + rank)
    n = cfg.steps * cfg.batch
    docs = torch.randperm(4096, generator=g)[:n] + rank * 4096
    if rank == DUPLICATED_DAY:
        start = 4 * cfg.batch
        docs[start:start + cfg.batch] = docs[start:start + 3].repeat(3)[: cfg.batch]
    queries = torch.randn(n, cfg.dim, generator=g)
    return queries, docs


def click_batches(rank: int, cfg):
    """Yield (queries [batch, dim], doc_ids [batch]) for this rank's day."""
    queries, docs = _day(rank, cfg)
    for i in range(cfg.steps):
        sl = slice(i * cfg.batch, (i + 1) * cfg.batch)
        yield queries[sl], docs[sl]
