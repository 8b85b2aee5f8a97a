# expect: DSY001 at line 41
"""Optimizer checkpoint with optional ZeRO: without ZeRO only data-parallel replica 0 saves and
the others return at once. But the saving path also sums the state's size over the
data-parallel group whatever `use_zero` says, and the replicas that returned never join that
all_reduce."""
import torch
import torch.distributed as dist


def gather_state(tensor, dp_group, tp_group, use_zero):
    if use_zero:
        parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size(dp_group))]
        dist.all_gather(parts, tensor, group=dp_group)
        tensor = torch.cat(parts)
    parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size(tp_group))]
    dist.all_gather(parts, tensor, group=tp_group)
    return torch.cat(parts)


def shard_states(optimizer, dp_group, tp_group, use_zero):
    shards = []
    for state in optimizer.state.values():
        shard = {}
        for key, value in state.items():
            shard[key] = gather_state(value, dp_group, tp_group, use_zero=use_zero)
        shards.append(shard)
    total = torch.tensor([len(shards)])
    dist.all_reduce(total, group=dp_group)
    return shards


class CheckpointIO:
    def __init__(self, dp_group, tp_group, use_zero):
        self.dp_group = dp_group
        self.tp_group = tp_group
        self.use_zero = use_zero
        self.dp_rank = dist.get_rank(dp_group)

    def save_optimizer(self, optimizer, path):
        if not self.use_zero and self.dp_rank != 0:
            return
        shards = shard_states(optimizer, self.dp_group, self.tp_group, use_zero=self.use_zero)
        if self.dp_rank == 0:
            torch.save(shards, path)
