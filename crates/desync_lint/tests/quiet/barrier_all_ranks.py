"""Barriers and collectives that every rank issues, in loops bounded by configuration."""
import torch
import torch.distributed as dist


def train(model, loader, args):
    dist.barrier()
    for step, batch in enumerate(loader):
        if step >= args.max_steps:
            break
        out = model(batch)
        dist.all_reduce(out)
        if step % args.sync_every == 0:
            dist.barrier()
    step = 0
    while step < args.max_steps:
        dist.all_reduce(torch.ones(1))
        step += 1
    dist.barrier()
