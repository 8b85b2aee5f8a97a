"""Collectives the miner uses (Gloo on CPU)."""

import torch
import torch.distributed as dist


def sum_and_shard(table: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    out = torch.empty(table.shape[0] // world, *table.shape[1:], dtype=table.dtype)
    dist.reduce_scatter_tensor(out, table, op=dist.ReduceOp.SUM)
    return out


def mean_scalar(value: float) -> float:
    t = torch.tensor([value])
    dist.all_reduce(t)
    return float(t) / dist.get_world_size()
