"""A sharding check: every rank builds the same reference tensor from one seed, takes its own
column window of it and gathers the windows. A window `[rank * w : (rank + 1) * w]` starts in a
different place on every rank but is `w` columns wide on all of them, so the gathered
shards have one shape."""
import torch
import torch.distributed as dist


def reference(rows, cols, device):
    torch.manual_seed(42)
    return torch.randint(0, 256, (rows, cols), dtype=torch.uint8, device=device)


def check_column_shards(device, rows=128, cols_per_rank=32):
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    full = reference(rows, cols_per_rank * world_size, device)
    shard = full[:, rank * cols_per_rank : (rank + 1) * cols_per_rank].contiguous()
    parts = [torch.zeros_like(shard) for _ in range(world_size)]
    dist.all_gather(parts, shard)
    assert torch.equal(torch.cat(parts, dim=1), full)
    start = rank * rows // world_size
    rows_of_rank = full[start : start + rows // world_size]
    gathered = [torch.zeros_like(rows_of_rank) for _ in range(world_size)]
    dist.all_gather(gathered, rows_of_rank)
