"""Optimizer checkpoint with optional ZeRO. Without ZeRO every data-parallel replica holds the
same optimizer state, so only replica 0 saves and the others return at once. Saving gathers
each state over the tensor-parallel group, and with ZeRO first over the data-parallel group,
which that early return would split. `not self.use_zero` is the same on every rank: whenever
a replica returns, the ones that stay run with `use_zero` false too, and gather over the
tensor-parallel group alone, whose members share their data-parallel rank."""
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

    def save_optimizer_then_wait(self, optimizer, path):
        # The same, with the staged barrier: the replicas that return wait in one barrier,
        # the others in one after saving.
        if not self.use_zero and self.dp_rank != 0:
            dist.barrier()
            return
        shards = shard_states(optimizer, self.dp_group, self.tp_group, use_zero=self.use_zero)
        if self.dp_rank == 0:
            torch.save(shards, path)
        dist.barrier()
