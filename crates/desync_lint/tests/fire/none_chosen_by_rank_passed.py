# expect: DSY001 at line 9
"""The caller passes bounds to rank 0 only: the others infer them, with an all_reduce that
rank 0 never joins."""
import torch
import torch.distributed as dist


def resolve_bounds(local_size, start, group):
    if start is None:
        size = torch.tensor(local_size)
        dist.all_reduce(size, op=dist.ReduceOp.MAX, group=group)
        start = dist.get_rank(group) * local_size
    return start


def sharded_loss(logits, target, group):
    start = 0 if dist.get_rank(group) == 0 else None
    start = resolve_bounds(logits.shape[-1], start, group)
    return (logits - start).sum()
