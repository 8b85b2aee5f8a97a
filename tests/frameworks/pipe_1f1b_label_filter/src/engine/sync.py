import torch
import torch.distributed as dist


def allreduce_grads(module, group) -> None:
    """Average this stage's gradients over its data-parallel replicas: one flat all_reduce."""
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    flat = torch.cat([g.flatten() for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= dist.get_world_size(group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def global_mean(value: float, group) -> float:
    t = torch.tensor([value])
    dist.all_reduce(t, group=group)
    return float(t) / dist.get_world_size(group)
