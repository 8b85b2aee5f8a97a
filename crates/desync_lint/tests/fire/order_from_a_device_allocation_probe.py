# expect: DSY004 at line 22
"""A probe that allocates a scratch buffer on the device: it raises (out of memory) on the
rank whose GPU is fuller, and only that rank walks the groups in the other order, so the
groups deadlock. (A probe of the node type alone: quiet/order_from_an_accelerator_probe.py.)"""
import torch
import torch.distributed as dist


def has_room_for_fused_kernels():
    try:
        scratch = torch.empty(1 << 30, device="cuda")
        del scratch
        count = torch.cuda.device_count()
        return count > 0
    except RuntimeError:
        return False


def reduce_over_groups(model, loader, groups):
    for batch in loader:
        order = list(groups)
        if has_room_for_fused_kernels():
            order.reverse()
        for group in order:
            dist.all_reduce(model(batch), group=group)
