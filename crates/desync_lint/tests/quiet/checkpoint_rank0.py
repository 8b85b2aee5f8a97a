"""Checkpointing on rank 0 only, followed by a barrier that every rank reaches."""
import os

import torch
import torch.distributed as dist


def save_checkpoint(model, optimizer, step, path):
    if dist.get_rank() == 0:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)
    dist.barrier()


def train(model, loader, optimizer, args, local_rank):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        if step % args.save_every == 0:
            save_checkpoint(model, optimizer, step, args.ckpt)
        if local_rank == 0:
            print("saved")
