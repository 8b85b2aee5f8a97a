"""A project's "take the leader's value" helper, two helpers deep: `gather_everything`
all-gathers one object per rank, `leaders_value` returns item 0 of what it gathered (rank 0's
value, the same list on every rank), and `seconds_spent` returns that for the rank's own clock.
The time budget is tested on a value every rank received alike, so every rank breaks on the
same step. (A guard: the build before this fixture was added already kept it quiet.)"""
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
    return leaders_value(time.time() - START)


def train(model, batches, budget):
    for batch in batches:
        if seconds_spent() > budget:
            break
        loss = model(batch).sum()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
