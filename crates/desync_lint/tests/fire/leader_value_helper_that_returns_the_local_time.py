# expect: DSY002 at line 30
"""The helpers of `quiet/leader_value_through_two_helpers.py`, but `seconds_spent` returns the
rank's own clock: the gathered value is never used, so each rank tests its own elapsed time
and a slow rank breaks out a step before the others' all_reduce."""
import time

import torch
import torch.distributed as dist

START = time.time()


def gather_everything(obj):
    received = [None] * dist.get_world_size()
    dist.all_gather_object(received, obj)
    return received


def leaders_value(value):
    return gather_everything(value if dist.get_rank() == 0 else None)[0]


def seconds_spent():
    return time.time() - START


def train(model, batches, budget):
    for batch in batches:
        if seconds_spent() > budget:
            break
        loss = model(batch).sum()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
