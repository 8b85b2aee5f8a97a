"""Tensor-parallel checkpoint gather: data-parallel rank 0 holds full parameters, the other
data-parallel ranks flat shards. The gather runs on the tensor-parallel group, whose members
share their data-parallel coordinate, so every member of one gather holds the same kind."""
import torch
import torch.distributed as dist


def gather_for_save(param, shards, dp_group, tp_group):
    dp_rank = dist.get_rank(dp_group)
    if dp_rank == 0:
        v = torch.cat(shards).view(-1)[: param.numel()].reshape(param.shape)
    else:
        v = shards[0]
    out = [torch.zeros_like(v) for _ in range(dist.get_world_size(tp_group))]
    dist.all_gather(out, v, group=tp_group)
    return out
