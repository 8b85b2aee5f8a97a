# expect: DSY004 at line 7
"""Even and odd ranks reduce over the two process groups in opposite orders."""
import torch.distributed as dist


def reduce_both(x, rank, tp_group, dp_group):
    if rank % 2 == 0:
        dist.all_reduce(x, group=tp_group)
        dist.all_reduce(x, group=dp_group)
    else:
        dist.all_reduce(x, group=dp_group)
        dist.all_reduce(x, group=tp_group)


def step(x, tp_group, dp_group):
    reduce_both(x, dist.get_rank(), tp_group, dp_group)
