# expect: DSY001 at line 13
# expect: DSY001 at line 15
"""The leaving ranks reduce on the metrics group, the staying ones on the default group: the
same op on different groups is a wait cycle, not a pair."""
import torch
import torch.distributed as dist

METRICS = dist.new_group(backend="gloo")


def report(flag):
    rank = dist.get_rank()
    if rank == 0:
        dist.all_reduce(flag, group=METRICS)
        return flag
    dist.all_reduce(flag)
    return flag
