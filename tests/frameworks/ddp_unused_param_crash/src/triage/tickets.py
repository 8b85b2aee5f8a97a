"""Support tickets: body tokens, account metadata, and the queue they were routed to.

Tickets are sharded in ID order. The block of tickets migrated from the legacy helpdesk has
no account metadata (mask 0).
"""

import torch
from torch.utils.data import DataLoader, TensorDataset

LEGACY_IMPORT = range(400, 416)  # ticket IDs imported from the old helpdesk


def load_tickets(n: int, cfg, seed: int):
    g = torch.Generator().manual_seed(seed)
    queue = torch.randint(0, cfg.n_queues, (n,), generator=g)
    tokens = (queue[:, None] * 37 + torch.randint(0, 80, (n, cfg.doc_len), generator=g)) % cfg.vocab
    meta = torch.randn(n, cfg.meta_features, generator=g) + queue[:, None] * 0.3
    has_meta = torch.rand(n, generator=g) > 0.25  # a quarter of accounts never filled the form
    has_meta[list(LEGACY_IMPORT)] = False
    return tokens, meta, has_meta.float(), queue


def shard_loader(rank: int, world: int, cfg) -> DataLoader:
    n = cfg.tickets_per_rank
    tokens, meta, mask, queue = load_tickets(n * world, cfg, cfg.seed)
    part = slice(rank * n, (rank + 1) * n)  # contiguous ID ranges, one per rank
    ds = TensorDataset(tokens[part], meta[part], mask[part], queue[part])
    return DataLoader(ds, batch_size=cfg.batch_size, shuffle=False, drop_last=True)
