"""A global gradient norm: a rank whose shard holds no gradient still takes part in the
reductions every other path issues (over the data-parallel group, then the model-parallel
group, each when the caller passed one), contributing zero, and returns early. The groups are
tested the same way on every path, so every path issues the same all_reduces in the same
order and the early return skips nothing."""
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
        if mp_group is not None:
            dist.all_reduce(zero, group=mp_group)
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
