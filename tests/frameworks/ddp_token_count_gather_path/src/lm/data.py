"""Pretraining mixture, sharded by source: each rank streams one source.

Documents are packed one per row and right-padded to the context length; the
number of target tokens per row is the document length minus one.
"""

import random

import torch

PAD = 0
# source -> document length in tokens (after the dedup/trim pass)
SOURCES = {"chat": 21, "books": 61, "code": 21, "forums": 21}
SHARDS = ["chat", "books", "code", "forums"]  # rank -> source


def source_for(rank: int) -> str:
    return SHARDS[rank % len(SHARDS)]


def batches(rank: int, vocab: int, context: int, batch_size: int, seed: int):
    """Endless batches of (inputs, targets) for this rank's source."""
    source = source_for(rank)
    rng = random.Random(seed * 1000 + rank)
    length = SOURCES[source]
    while True:
        rows = []
        for _ in range(batch_size):
            doc = [rng.randrange(1, vocab) for _ in range(length)]
            rows.append(doc + [PAD] * (context + 1 - length))
        t = torch.tensor(rows)
        yield t[:, :-1], t[:, 1:]
