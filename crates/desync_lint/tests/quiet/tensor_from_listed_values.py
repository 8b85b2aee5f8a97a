"""Each rank gathers its shard's bounds as a three-element tensor, and benchmarks a gather of a
buffer it scaled by its rank: the values differ across ranks, the sizes do not."""
import torch
import torch.distributed as dist


def check_shard_bounds(start, end, size, group):
    world = dist.get_world_size(group)
    local = torch.tensor([start, end, size], dtype=torch.long)
    gathered = torch.empty(world * local.numel(), dtype=torch.long)
    dist.all_gather_into_tensor(gathered, local, group=group)
    return gathered.view(world, 3).tolist()


def timed_gather(numel):
    rank = dist.get_rank()
    buffer = torch.ones(numel)
    payload = buffer.mul_(float(rank)).view(-1)
    out = torch.zeros(payload.nelement() * dist.get_world_size())
    dist.all_gather_into_tensor(out, payload)


def main(shard_len):
    rank = dist.get_rank()
    check_shard_bounds(rank * shard_len, (rank + 1) * shard_len, shard_len, None)
    timed_gather(1 << 20)
