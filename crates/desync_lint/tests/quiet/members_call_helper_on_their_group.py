"""Bandwidth profiler: the ranks of one profiled group agree on the largest message size
through a helper that all-reduces on that group; ranks outside the group skip it."""
import torch
import torch.distributed as dist


def largest_message(nbytes, group):
    size = torch.tensor([nbytes])
    dist.all_reduce(size, op=dist.ReduceOp.MAX, group=group)
    return int(size.item())


def profile(ranks, nbytes):
    rank = dist.get_rank()
    group = dist.new_group(ranks)
    if rank not in ranks:
        largest = None
    else:
        largest = largest_message(nbytes, group)
    return largest
