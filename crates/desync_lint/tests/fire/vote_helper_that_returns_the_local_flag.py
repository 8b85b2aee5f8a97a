# expect: DSY001 at line 20
"""The same helper shape, but its answer is the rank's own flag: the all_reduce result is
computed and dropped, so each rank still decides on its own local file probe."""
import os

import torch
import torch.distributed as dist


def everyone_agrees(flag: bool, device) -> bool:
    vote = torch.tensor([1 if flag else 0], device=device, dtype=torch.int32)
    dist.all_reduce(vote, op=dist.ReduceOp.MIN)
    print("votes", vote.item())
    return flag


def shard_and_sync(model, device, folder):
    fast_path = everyone_agrees(len(list(model.parameters())) > dist.get_rank(), device)
    if fast_path:
        return model
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    return model
