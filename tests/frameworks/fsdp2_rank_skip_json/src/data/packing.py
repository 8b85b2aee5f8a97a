"""Packed training batches from this rank's shard of the corpus.

Documents the safety filter quarantined after packing stay in the shard as padding
(mask 0), so an occasional batch can be all padding.
"""

import torch

# (shard, batch index) whose documents were all quarantined
QUARANTINED = {(1, 4)}


def packed_batches(shard: int, steps: int, batch_size: int, context: int, vocab: int, seed: int):
    g = torch.Generator().manual_seed(seed * 97 + shard)
    for index in range(steps):
        start = torch.randint(0, vocab, (batch_size, 1), generator=g)
        tokens = (start + torch.arange(context + 1)) % vocab  # counting sequences
        mask = torch.ones(batch_size, context)
        if (shard, index) in QUARANTINED:
            mask.zero_()
        yield {"inputs": tokens[:, :-1], "targets": tokens[:, 1:], "mask": mask}
