"""Data-parallel regression with in-process restarts (the torchft / elastic style):
after a planned membership change the ranks tear the process group down and
join a fresh one in the same processes, then resume training from the model they
hold. The fresh group's collectives count from 1 again, while the Flight Recorder
buffer still holds the first group's entries.

After the restart, each step averages gradients, then reduces the step's loss
statistics for the progress log. A rank whose loss is not finite skips the
statistics (it would poison the log) with ``continue``: on one rank a corrupt
sample makes the third step's loss NaN, so it goes on to the next step's gradient
all_reduce while its peers reduce statistics.
"""

import argparse
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16


def make_shard(rank, n, corrupt_row=None, seed=1234):
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    if corrupt_row is not None:
        x[corrupt_row, 3] = float("nan")
    return x, y


def build_model():
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))


def broadcast_parameters(model):
    for p in model.parameters():
        dist.broadcast(p.data, src=0)


def allreduce_gradients(model, world_size):
    grads = [torch.nan_to_num(p.grad) for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for p, g in zip(model.parameters(), grads):
        p.grad.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def rejoin(ctx, attempt):
    """Leave the current process group and join a fresh one on the same store."""
    dist.destroy_process_group()
    store = dist.PrefixStore(f"attempt-{attempt}", ctx.store)
    dist.init_process_group("gloo", store=store, rank=ctx.rank, world_size=ctx.world_size,
                            timeout=ctx.timeout)


def train(model, optimizer, loader, world_size, rank, log_prefix):
    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        if not math.isfinite(loss.item()):
            print(f"rank {rank}: non-finite loss at step {step}, not logged", flush=True)
            continue
        stats = torch.tensor([loss.item() * len(xb), float(len(xb))])
        dist.all_reduce(stats)
        if rank == 0:
            print(f"{log_prefix} step {step}: loss {stats[0] / stats[1]:.4f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)
    model = build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

    broadcast_parameters(model)
    x, y = make_shard(rank, args.warmup_steps * args.batch_size)
    train(model, optimizer, DataLoader(TensorDataset(x, y), batch_size=args.batch_size),
          world_size, rank, "warmup")

    rejoin(ctx, attempt=1)
    broadcast_parameters(model)
    corrupt = 2 * args.batch_size + 5 if rank == 2 else None
    x, y = make_shard(rank + 100, args.steps * args.batch_size, corrupt_row=corrupt)
    train(model, optimizer, DataLoader(TensorDataset(x, y), batch_size=args.batch_size),
          world_size, rank, "resumed")

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
