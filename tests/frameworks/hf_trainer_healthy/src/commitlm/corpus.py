"""Commit messages, already tokenized by the repo-mining job into ids < vocab_size."""

import random

import torch
from torch.utils.data import Dataset

BOS, EOS, PAD = 1, 2, 0
VERBS = list(range(10, 30))      # fix, add, remove, bump, ...
OBJECTS = list(range(30, 120))   # file / module / dependency names
FILLER = list(range(120, 192))


def synth_messages(n: int, seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        msg = [rng.choice(VERBS), rng.choice(OBJECTS)]
        msg += [rng.choice(FILLER) for _ in range(rng.randint(2, 20))]
        out.append(msg)
    return out


class CommitDataset(Dataset):
    def __init__(self, messages, context: int):
        self.messages = messages
        self.context = context

    def __len__(self):
        return len(self.messages)

    def __getitem__(self, i):
        ids = ([BOS] + self.messages[i] + [EOS])[: self.context]
        n = len(ids)
        pad = self.context - n
        labels = ids + [-100] * pad
        return {
            "input_ids": torch.tensor(ids + [PAD] * pad),
            "attention_mask": torch.tensor([1] * n + [0] * pad),
            "labels": torch.tensor(labels),
        }
