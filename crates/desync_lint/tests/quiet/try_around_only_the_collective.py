"""A vote helper guards its all_reduce with a `try`: nothing before the collective in the
`try` can raise but the tensor built from the arguments and the collective itself, and a
failing collective fails on every rank alike; the fallback is then taken by every rank."""
import torch
import torch.distributed as dist


def agree_all(flag, device):
    try:
        vote = torch.tensor([int(flag)], device=device)
        dist.all_reduce(vote, op=dist.ReduceOp.MIN)
        return bool(vote.item())
    except RuntimeError:
        return False


def sync_amax(amax, group):
    try:
        dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=group)
    except RuntimeError as err:
        print("amax sync failed:", err)
        raise
