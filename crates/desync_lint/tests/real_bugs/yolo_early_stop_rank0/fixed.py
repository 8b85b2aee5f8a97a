"""Detector training loop with patience-based early stopping under DDP.

The main process decides whether to stop and broadcasts the decision, so every rank
leaves the epoch loop at the same epoch.
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

        if RANK != -1:
            decision = [stop if RANK == 0 else None]
            dist.broadcast_object_list(decision, 0)
            stop = decision[0]
        if stop:
            break
    if RANK != -1:
        dist.destroy_process_group()
