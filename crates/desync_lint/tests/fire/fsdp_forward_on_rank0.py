# expect: DSY001 at line 15
"""Sampling on rank 0 only with an FSDP model: its forward all-gathers parameters."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def train(model, loader, optimizer, prompt):
    model = FSDP(model)
    rank = dist.get_rank()
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        if rank == 0:
            with torch.no_grad():
                sample = model(prompt)
            print(sample)
