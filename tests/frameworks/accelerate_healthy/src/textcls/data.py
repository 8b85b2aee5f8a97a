"""Synthetic documents: the label decides which third of the vocabulary dominates."""

import torch
from torch.utils.data import Dataset


class TopicDocs(Dataset):
    def __init__(self, docs: int, vocab: int, seq_len: int, classes: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, classes, (docs,), generator=g)
        band = vocab // classes
        topical = torch.randint(0, band, (docs, seq_len), generator=g) + self.labels[:, None] * band
        noise = torch.randint(0, vocab, (docs, seq_len), generator=g)
        keep = torch.rand(docs, seq_len, generator=g) < 0.6
        self.tokens = torch.where(keep, topical, noise)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.tokens[i], self.labels[i]
