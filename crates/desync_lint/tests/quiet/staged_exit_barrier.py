"""Non-saving ranks wait at a barrier and leave; the saving rank writes, then reaches the same
barrier. Every rank issues one barrier on the default group: the exit is paired."""
import os

import torch
import torch.distributed as dist


def save_sharded(model, optimizer, path):
    rank = dist.get_rank()
    if rank != 0:
        dist.barrier()
        return
    os.makedirs(path, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(path, "model.pt"))
    torch.save(optimizer.state_dict(), os.path.join(path, "optim.pt"))
    dist.barrier()


def broadcast_role(tensor, src_rank, group):
    # The source sends and returns; the others receive the same broadcast further down.
    rank = dist.get_rank()
    if rank == src_rank:
        dist.broadcast(tensor, src=src_rank, group=group)
        return tensor
    out = torch.empty_like(tensor)
    dist.broadcast(out, src=src_rank, group=group)
    return out
