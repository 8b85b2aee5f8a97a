"""Product reviews with a helpfulness score (votes helpful / votes total).

The scores come from a CSV export; reviews that nobody voted on have an empty cell,
which the loader turns into NaN.
"""

import math
import random

import torch
from torch.utils.data import Dataset

PAD, CLS = 0, 1
# rows of the export whose vote columns are empty (nobody voted yet)
UNVOTED_ROWS = {178}


def _review(rng: random.Random, vocab_size: int, max_length: int):
    n = rng.randint(8, max_length - 1)
    tokens = [rng.randrange(4, vocab_size) for _ in range(n)]
    # longer reviews mentioning "specs" tokens (< 40) tend to be voted helpful
    score = min(1.0, 0.2 + 0.02 * n + 0.05 * sum(t < 40 for t in tokens))
    return tokens, score


def load_reviews(count: int, vocab_size: int, max_length: int, seed: int, first_row: int = 0):
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        tokens, score = _review(rng, vocab_size, max_length)
        if first_row + i in UNVOTED_ROWS:
            score = math.nan  # empty cell in the export
        rows.append((tokens, score))
    return rows


class ReviewDataset(Dataset):
    def __init__(self, rows, max_length: int):
        self.rows = rows
        self.max_length = max_length

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        tokens, score = self.rows[i]
        ids = [CLS] + tokens
        mask = [1] * len(ids)
        pad = self.max_length - len(ids)
        return {
            "input_ids": torch.tensor(ids + [PAD] * pad),
            "attention_mask": torch.tensor(mask + [0] * pad),
            "labels": torch.tensor(score, dtype=torch.float32),
        }
