"""Each rank reads one source of the corpus; documents are cut or padded to seq_len rows."""

import torch

SOURCES = ["web", "code", "forum", "books"]
# document length ranges (tokens); web, code and books documents are longer than a row,
# forum posts often are not
LENGTHS = {"web": (40, 400), "code": (30, 600), "forum": (6, 60), "books": (200, 900)}
PAD = 0


def _documents(source: str, count: int, vocab: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    lo, hi = LENGTHS[source]
    for _ in range(count):
        n = int(torch.randint(lo, hi + 1, (1,), generator=g))
        start = int(torch.randint(1, vocab, (1,), generator=g))
        yield [1 + (start + 7 * i + i * i) % (vocab - 1) for i in range(n)]


def shard_batches(rank: int, cfg):
    """Yield (tokens, mask) batches of shape [batch, seq_len] for this rank's source."""
    source = SOURCES[rank % len(SOURCES)]
    docs = _documents(source, cfg.steps * cfg.batch, cfg.vocab, cfg.seed * 100 + rank)
    rows = []
    for doc in docs:
        row = doc[: cfg.seq_len]
        rows.append(row + [PAD] * (cfg.seq_len - len(row)))
        if len(rows) == cfg.batch:
            tokens = torch.tensor(rows)
            yield tokens, tokens != PAD
            rows = []
