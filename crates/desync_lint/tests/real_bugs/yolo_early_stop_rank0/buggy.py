"""Detector training loop with patience-based early stopping under DDP.

Validation, checkpointing and the early-stopping decision run on the main process only
(RANK -1 single-GPU or 0). The stop flag is then used to leave the epoch loop on every
rank, but only the main process ever computed it: rank 0 breaks out, the other ranks start
the next epoch and wait in DDP's gradient all_reduce forever.
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.getenv("RANK", -1))
LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))


class EarlyStopping:
    def __init__(self, patience=30):
        self.best_fitness = 0.0
        self.best_epoch = 0
        self.patience = patience

    def __call__(self, epoch, fitness):
        if fitness >= self.best_fitness:
            self.best_epoch = epoch
            self.best_fitness = fitness
        return (epoch - self.best_epoch) >= self.patience


def train(model, train_loader, val_fn, optimizer, epochs, patience):
    if RANK != -1:
        model = DDP(model, device_ids=[LOCAL_RANK])
    stopper, stop = EarlyStopping(patience=patience), False
    for epoch in range(epochs):
        model.train()
        if RANK != -1:
            train_loader.sampler.set_epoch(epoch)
        for imgs, targets in train_loader:
            loss = model(imgs.to(LOCAL_RANK), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        if RANK in {-1, 0}:
            fitness = val_fn(model)
            stop = stopper(epoch=epoch, fitness=fitness)
            torch.save({"epoch": epoch, "model": model.state_dict()}, "last.pt")

        if stop:
            break  # BUG: only the main process computed `stop`; the other ranks keep training
    if RANK != -1:
        dist.destroy_process_group()
