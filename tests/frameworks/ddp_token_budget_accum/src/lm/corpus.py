"""Each rank streams one source of the corpus (sharded by source, not by document).

Sources differ in document length: contracts run long, tickets and chat are short.
"""

import torch
from torch.utils.data import DataLoader, Dataset

SOURCES = ["tickets", "chat", "contracts", "emails"]
LENGTHS = {"tickets": (24, 36), "chat": (24, 36), "contracts": (48, 64), "emails": (24, 36)}
PAD = 0


class SourceShard(Dataset):
    def __init__(self, source: str, docs: int, vocab: int, seed: int):
        g = torch.Generator().manual_seed(seed)
        lo, hi = LENGTHS[source]
        self.docs = []
        for _ in range(docs):
            n = int(torch.randint(lo, hi + 1, (1,), generator=g))
            start = torch.randint(1, vocab, (1,), generator=g)
            step = torch.randint(1, 4, (1,), generator=g)
            # a noisy arithmetic walk over the vocabulary: learnable, not trivial
            walk = (start + step * torch.arange(n) + torch.randint(0, 2, (n,), generator=g))
            self.docs.append(1 + walk % (vocab - 1))

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        return self.docs[i]


def pad_batch(docs):
    width = max(len(d) for d in docs)
    tokens = torch.full((len(docs), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(docs), width), dtype=torch.bool)
    for row, doc in enumerate(docs):
        tokens[row, : len(doc)] = doc
        mask[row, : len(doc)] = True
    return tokens, mask


def shard_loader(rank: int, cfg):
    source = SOURCES[rank % len(SOURCES)]
    shard = SourceShard(source, cfg.docs_per_rank, cfg.vocab, cfg.seed * 100 + rank)
    return DataLoader(shard, batch_size=cfg.micro_batch, collate_fn=pad_batch), source
