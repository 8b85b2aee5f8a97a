# expect: DSY005 at line 14
"""Each rank sends the ids it owns, and rank r owns r + 1 of them: the gathered tensors differ
in size."""
import torch
import torch.distributed as dist


def owned_ids(rank):
    return list(range(rank + 1))


def gather_ids(out):
    ids = torch.tensor(owned_ids(dist.get_rank()))
    dist.all_gather_into_tensor(out, ids)
