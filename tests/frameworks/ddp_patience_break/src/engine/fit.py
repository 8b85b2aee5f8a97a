"""Training with early stopping on the validation loss."""

import torch
import torch.distributed as dist

from config import PATIENCE
from engine.steps import train_one_epoch, validate


def fit(model, optimizer, train_loader, val_loader, args, rank: int) -> float:
    best, bad_epochs = float("inf"), 0
    for epoch in range(args.max_epochs):
        train_loss = train_one_epoch(model, optimizer, train_loader)
        val_loss = validate(model, val_loader)
        print(f"rank {rank} epoch {epoch}: train {train_loss:.4f} val {val_loss:.4f}", flush=True)
        if val_loss < best - args.min_delta:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
        if bad_epochs >= PATIENCE:
            print(f"rank {rank}: no improvement for {PATIENCE} epochs, stopping after epoch {epoch}",
                  flush=True)
            break
    # The run's reported score: the best validation loss of any market.
    score = torch.tensor([best])
    dist.all_reduce(score, op=dist.ReduceOp.MIN)
    return score.item()
