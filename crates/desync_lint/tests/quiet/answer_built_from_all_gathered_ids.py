"""A helper all-gathers each rank's device id and returns whether all are equal: built only
from the gathered list, the answer is the same on every rank, so the early return on it is
taken alike. (A guard: quiet before this fixture was added.)"""
import torch
import torch.distributed as dist


def same_devices():
    mine = torch.cuda.current_device()
    ids = [None] * dist.get_world_size()
    dist.all_gather_object(ids, mine)
    everyone = all(i == ids[0] for i in ids)
    return everyone


def reduce(t):
    if not same_devices():
        return None
    dist.all_reduce(t)
    return t
