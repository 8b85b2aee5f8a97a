"""Synthetic search queries labelled with an intent, one shard per data-parallel rank."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def synth_queries(n: int, vocab: int, seq_len: int, n_intents: int, seed: int):
    """Each intent owns a band of the vocabulary; a query mixes its band with noise tokens."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, n_intents, (n,), generator=g)
    band = vocab // (n_intents + 1)
    own = labels[:, None] * band + torch.randint(0, band, (n, seq_len), generator=g)
    noise = n_intents * band + torch.randint(0, vocab - n_intents * band, (n, seq_len), generator=g)
    pick = torch.rand(n, seq_len, generator=g) < 0.6
    tokens = torch.where(pick, own, noise)
    return tokens, labels


def shard_loader(rank: int, world: int, cfg, micro_batch: int) -> DataLoader:
    tokens, labels = synth_queries(cfg.queries_per_rank * world, cfg.vocab, cfg.seq_len,
                                   cfg.n_intents, cfg.seed)
    ds = TensorDataset(tokens[rank::world], labels[rank::world])
    return DataLoader(ds, batch_size=micro_batch, shuffle=False, drop_last=True)
