"""Impression logs: (user, item, clicked). The eval log is a later day's export, in
which some users are new (cold start: ids beyond the embedding table's known range)."""

import random

import torch
from torch.utils.data import Dataset

# rows of the eval export whose user signed up after the training snapshot
COLD_START_ROWS = (4, 9, 14, 22, 29, 41, 50)


def impressions(n: int, known_users: int, items: int, seed: int, cold_rows=()):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        user = rng.randrange(known_users)
        item = rng.randrange(items)
        clicked = float((user * 7 + item * 3) % 5 < 2)
        cold = i in cold_rows
        rows.append({"row": i, "user": known_users if cold else user, "item": item,
                     "clicked": clicked, "cold": cold})
    return rows


class ImpressionDataset(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return (torch.tensor(r["row"]), torch.tensor(r["user"]), torch.tensor(r["item"]),
                torch.tensor(r["clicked"]), torch.tensor(r["cold"]))
