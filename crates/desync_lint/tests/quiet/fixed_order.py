"""Process groups walked in one fixed order on every rank (reordering is unconditional)."""
import torch.distributed as dist


def reduce_gradients(params, tp_group, dp_group, flat):
    groups = [tp_group, dp_group]
    groups.reverse()
    for group in groups:
        dist.all_reduce(flat, group=group)


def reduce_in_config_order(flat, groups, args):
    order = list(groups)
    if args.dp_first:
        order.reverse()
    for group in order:
        dist.all_reduce(flat, group=group)
