# expect: DSY002 at line 11
"""Each rank loops over its own shard length: the last iterations' all_reduce is unmatched."""
import torch
import torch.distributed as dist


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
