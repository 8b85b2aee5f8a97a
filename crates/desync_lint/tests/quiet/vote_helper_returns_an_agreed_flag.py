"""A project helper votes with an all_reduce and returns what the vote gave (`bool` of the
reduced tensor's item): every rank gets the same answer, so a decision taken on it is taken
alike. The flag voted on is rank-local (a local file probe), the answer is not."""
import os

import torch
import torch.distributed as dist


def everyone_agrees(flag: bool, device) -> bool:
    vote = torch.tensor([1 if flag else 0], device=device, dtype=torch.int32)
    dist.all_reduce(vote, op=dist.ReduceOp.MIN)
    return bool(vote.item())


def shard_and_sync(model, device, folder):
    fast_path = everyone_agrees(len(list(model.parameters())) > dist.get_rank(), device)
    if fast_path:
        return model
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    return model
