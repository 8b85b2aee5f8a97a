"""DDP + SyncBatchNorm trainer that no longer swallows out-of-memory errors.

As the maintainers answered, a rank cannot skip or redo its part of the step's collectives
after an OOM: the error propagates, the process exits, and the elastic launcher tears
down and restarts every rank together.
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
    for images, targets in loader:
        images = images.cuda(local_rank, non_blocking=True)
        targets = targets.cuda(local_rank, non_blocking=True)
        optimizer.zero_grad()
        loss = criterion(model(images), targets)
        loss.backward()
        optimizer.step()


def main(loader, epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = build(local_rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        # An OOM inside DDP's forward/backward cannot be recovered rank by rank (the
        # collectives are already under way); let it raise and have torchrun restart
        # every rank from the last checkpoint instead.
        train_one_epoch(model, loader, optimizer, criterion, local_rank)
    dist.destroy_process_group()
