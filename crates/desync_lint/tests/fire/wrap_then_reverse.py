# expect: DSY004 at line 12
"""Wrapping one group into a list is not a reordering, but reversing the list of groups on
odd ranks is: they reduce over the second group first while the even ranks wait in the
first."""
import torch.distributed as dist


def reduce(groups, x):
    rank = dist.get_rank()
    if not isinstance(groups, list):
        groups = [groups]
    if rank % 2 == 1:
        groups = groups[::-1]
    for g in groups:
        dist.all_reduce(x, group=g)
