"""Rank-asymmetric point-to-point calls and symmetric collectives under rank checks."""
import torch
import torch.distributed as dist


def pipeline_step(x, rank, world_size):
    if rank == 0:
        dist.send(x, dst=1)
    elif rank == world_size - 1:
        dist.recv(x, src=rank - 1)
    else:
        dist.recv(x, src=rank - 1)
        dist.send(x, dst=rank + 1)


def share_config(cfg, rank):
    if rank == 0:
        payload = [cfg]
        dist.broadcast_object_list(payload, src=0)
    else:
        payload = [None]
        dist.broadcast_object_list(payload, src=0)
    return payload[0]


def share_tensor(buf, rank):
    data = torch.arange(4.0) if rank == 0 else torch.empty(4)
    dist.broadcast(data, src=0)
    gather_list = [torch.empty(4) for _ in range(4)] if rank == 0 else None
    dist.gather(data, gather_list, dst=0)
