# expect: DSY002 at line 12
"""Each rank loops over its own shard length: the last iterations' all_reduce is unmatched."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def evaluate(model, shard, batch_size):
    total = torch.zeros(1)
    start = 0
    n_local = len(shard)
    while start < n_local:
        out = model(shard[start:start + batch_size])
        dist.all_reduce(out)
        total += out.sum()
        start += batch_size
    return total


def validate(model, dataset, batch_size):
    for shard in DataLoader(dataset, batch_size=1024):
        evaluate(model, shard, batch_size)
