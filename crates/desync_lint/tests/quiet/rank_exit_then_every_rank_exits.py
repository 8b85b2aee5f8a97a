"""Gathering variable-length shards to rank 0. When every rank's shard is empty (the counts
were all-gathered first, so every rank knows), the receivers return None and the root returns
an empty list: both leave before the gather, so no rank waits in it."""
import torch
import torch.distributed as dist


def gather_shards_to_root(shard, group=None):
    rank = dist.get_rank(group)
    world = dist.get_world_size(group)
    count = torch.tensor([shard.numel()])
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count, group=group)
    longest = max(int(c.item()) for c in counts)
    if longest == 0:
        if rank != 0:
            return None
        return []
    padded = torch.zeros(longest, dtype=shard.dtype)
    padded[: shard.numel()] = shard
    parts = [torch.zeros_like(padded) for _ in range(world)] if rank == 0 else None
    dist.gather(padded, parts, dst=0, group=group)
    return parts if rank == 0 else None
