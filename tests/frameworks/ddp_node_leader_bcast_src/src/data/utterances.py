"""Synthetic bag-of-token utterances with an intent label."""

import torch
from torch.utils.data import DataLoader, TensorDataset


def loader(n: int, vocab: int, classes: int, batch_size: int, seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    tokens = torch.randint(0, vocab, (n, 12), generator=g)
    tokens[:, 0] = y * (vocab // classes)  # one informative token per utterance
    return DataLoader(TensorDataset(tokens, y), batch_size=batch_size, shuffle=True,
                      drop_last=True)
