# expect: DSY004 at line 9
# expect: DSY004 at line 17
"""Process groups walked in a rank-dependent order: a reversal and a conditional expression."""
import torch.distributed as dist


def reduce_gradients(flat, groups, dp_rank):
    order = list(groups)
    if dp_rank % 2 == 1:
        order = order[::-1]
    for group in order:
        dist.all_reduce(flat, group=group)


def reduce_again(flat, tp_group, dp_group):
    rank = dist.get_rank()
    order = [tp_group, dp_group] if rank < 4 else [dp_group, tp_group]
    for group in order:
        dist.all_reduce(flat, group=group)


def sync(flat, groups, dp_group):
    reduce_gradients(flat, groups, dist.get_rank(group=dp_group))
