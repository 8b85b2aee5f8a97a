# expect: DSY001 at line 15
# expect: DSY001 at line 19
"""The same norm, but the empty-shard path reduces over the data-parallel group only and
returns: its model-parallel peers wait in the second all_reduce."""
import math

import torch
import torch.distributed as dist


def sharded_grad_norm(params, dp_group=None, mp_group=None, norm_type=2.0):
    rank = dist.get_rank(mp_group)
    width = dist.get_world_size(mp_group)
    grads = [p.grad for i, p in enumerate(params) if i % width == rank and p.grad is not None]
    if not grads:
        zero = torch.zeros(1)
        if dp_group is not None:
            dist.all_reduce(zero, group=dp_group)
        return 0.0
    if norm_type == math.inf:
        total = torch.tensor([max(float(g.abs().max()) for g in grads)])
        if dp_group is not None:
            dist.all_reduce(total, op=dist.ReduceOp.MAX, group=dp_group)
        if mp_group is not None:
            dist.all_reduce(total, op=dist.ReduceOp.MAX, group=mp_group)
        return total.item()
    total = torch.tensor([sum(float(g.norm(norm_type)) ** norm_type for g in grads)])
    if dp_group is not None:
        dist.all_reduce(total, group=dp_group)
    if mp_group is not None:
        dist.all_reduce(total, group=mp_group)
    return total.item() ** (1.0 / norm_type)
