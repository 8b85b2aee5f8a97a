"""A capability probe of the node type: `torch.xpu.device_count()` raises a RuntimeError where
the build has no XPU support, and the probe answers False then. What it asks is the kind of
accelerator the job was launched on, the same on every rank, so whether it raised is too:
the groups are walked in one order everywhere. (A probe that allocates on the device, whose
failure is the rank's own: fire/order_from_a_device_allocation_probe.py.)"""
import torch
import torch.distributed as dist


def is_xpu_available(check_device=False):
    if check_device:
        try:
            _ = torch.xpu.device_count()
            return torch.xpu.is_available()
        except RuntimeError:
            return False
    return hasattr(torch, "xpu") and torch.xpu.is_available()


def reduce_over_groups(model, loader, groups):
    for batch in loader:
        order = list(groups)
        if is_xpu_available(check_device=True):
            order.reverse()
        for group in order:
            dist.all_reduce(model(batch), group=group)
