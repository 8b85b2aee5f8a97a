"""Synthetic news articles (ids from the newsroom tokenizer) with a topic label."""

import random

import torch
from torch.utils.data import Dataset

PAD, CLS, SEP = 0, 1, 2


def articles(n: int, num_topics: int, vocab_size: int, seq_len: int, seed: int, register: int = 0):
    rng = random.Random(seed)
    band = (vocab_size - 10) // num_topics
    rows = []
    for _ in range(n):
        topic = rng.randrange(num_topics)
        length = rng.randint(6, seq_len - 2)
        words = []
        for _ in range(length):
            if rng.random() < 0.6 - 0.2 * register:  # forum posts are noisier
                words.append(10 + topic * band + rng.randrange(band))
            else:
                words.append(rng.randrange(10, vocab_size))
        rows.append((words, topic))
    return rows


class TopicDataset(Dataset):
    def __init__(self, rows, seq_len: int):
        self.rows = rows
        self.seq_len = seq_len

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        words, topic = self.rows[i]
        ids = [CLS] + words + [SEP]
        pad = self.seq_len - len(ids)
        return {
            "input_ids": torch.tensor(ids + [PAD] * pad),
            "attention_mask": torch.tensor([1] * len(ids) + [0] * pad),
            "labels": torch.tensor(topic),
        }
