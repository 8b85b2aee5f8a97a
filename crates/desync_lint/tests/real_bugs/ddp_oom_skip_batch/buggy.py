"""DDP + SyncBatchNorm trainer that tries to survive CUDA out-of-memory errors.

A rank that runs out of memory in forward/backward prints a warning, frees the cache and
moves on to the next batch. Its peers are still inside the same step: SyncBatchNorm's
all_gather and DDP's gradient all_reduce wait for a rank that has left.
"""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build(local_rank):
    net = nn.Sequential(nn.Conv2d(3, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
    net = nn.SyncBatchNorm.convert_sync_batchnorm(net).cuda(local_rank)
    return DDP(net, device_ids=[local_rank])


def train_one_epoch(model, loader, optimizer, criterion, local_rank):
    model.train()
    for step, (images, targets) in enumerate(loader):
        images = images.cuda(local_rank, non_blocking=True)
        targets = targets.cuda(local_rank, non_blocking=True)
        try:
            optimizer.zero_grad()
            loss = criterion(model(images), targets)
            loss.backward()
            optimizer.step()
        except RuntimeError as err:  # BUG: this rank drops the batch, its peers stay in the step
            if "out of memory" in str(err):
                print(f"[rank {dist.get_rank()}] out of memory at step {step}, skipping batch")
                torch.cuda.empty_cache()
                optimizer.zero_grad()
            else:
                raise


def main(loader, epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = build(local_rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        train_one_epoch(model, loader, optimizer, criterion, local_rank)
    dist.destroy_process_group()
