"""Token stream over this rank's shard, packed into batches by a token budget.

Shards are cut by document count; document lengths follow each source's own distribution
(shard i reads source i % 4; source 1 is the short-caption crawl).
"""

import torch

MEAN_LENGTH = {0: 24, 1: 12, 2: 24, 3: 24}


class PackedStream:
    def __init__(self, rank: int, docs: int, vocab: int, budget: int, seed: int):
        g = torch.Generator().manual_seed(seed * 7 + rank)
        mean = MEAN_LENGTH[rank % 4]
        lengths = (mean + torch.randint(-4, 5, (docs,), generator=g)).tolist()
        self.docs = [torch.randint(0, vocab, (n,), generator=g) for n in lengths]
        self.budget = budget
        self.cursor = 0
        self.epoch_tokens = sum(lengths)

    def next_batch(self) -> torch.Tensor:
        """Concatenate documents until the budget is full; pad to the budget."""
        out = torch.zeros(self.budget, dtype=torch.long)
        used = 0
        while self.cursor < len(self.docs) and used + len(self.docs[self.cursor]) <= self.budget:
            doc = self.docs[self.cursor]
            out[used:used + len(doc)] = doc
            used += len(doc)
            self.cursor += 1
        return out[:max(used, 2)]
