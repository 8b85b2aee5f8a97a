import torch
import torch.distributed as dist


def replica_mean(value: torch.Tensor, topo) -> float:
    """Mean over this replica's shard ranks (the replica's view of its plant)."""
    t = value.detach().reshape(1).clone()
    dist.all_reduce(t, group=topo.shard_group)
    return float(t) / topo.num_shards


def global_mean(value: float) -> float:
    t = torch.tensor([value])
    dist.all_reduce(t)
    return float(t) / dist.get_world_size()
