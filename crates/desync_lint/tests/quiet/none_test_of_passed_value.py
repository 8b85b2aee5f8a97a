"""Vocabulary-parallel loss: the shard bounds are inferred (with a validating all_reduce)
only when the caller passes none. The caller passes bounds computed from the rank, which are
numbers on every rank: `start is None` is false everywhere, so every rank skips the
validation together."""
import torch
import torch.distributed as dist


def resolve_bounds(local_size, start, group):
    if start is None:
        size = torch.tensor(local_size)
        dist.all_reduce(size, op=dist.ReduceOp.MAX, group=group)
        start = dist.get_rank(group) * local_size
    return start


def sharded_loss(logits, target, group):
    rank = dist.get_rank(group)
    start = rank * logits.shape[-1]
    start = resolve_bounds(logits.shape[-1], start, group)
    return (logits - start).sum()
