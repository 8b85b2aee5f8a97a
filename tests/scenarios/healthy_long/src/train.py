"""Data-parallel regression that skips batches with a non-finite loss, and keeps a
job-wide count of skipped batches on a separate metrics process group.

Each rank reads its own shard from the data export its node mounts
(``SHARD_EXPORT``). The ``nightly-glitched`` export has one NaN reading (row 200,
step 6), and only rank 1's node mounts it.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
BATCH = 32


def make_shard(rank, n, seed=99):
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    if os.environ.get("SHARD_EXPORT") == "nightly-glitched" and n > 200:
        x[200, 3] = float("nan")  # the export glitch
    return x, y


def allreduce_gradients(model, world_size):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--step-time", type=float, default=0.3)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    metrics_pg = dist.new_group(list(range(world_size)))
    torch.manual_seed(0)

    x, y = make_shard(rank, args.steps * BATCH)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    skipped = torch.zeros(1)

    started = time.perf_counter()
    for step in range(args.steps):
        xb, yb = x[step * BATCH:(step + 1) * BATCH], y[step * BATCH:(step + 1) * BATCH]
        time.sleep(args.step_time)  # the forward/backward of a real model
        loss = F.mse_loss(model(xb), yb)
        if not torch.isfinite(loss):
            skipped += 1
            dist.all_reduce(skipped, group=metrics_pg)  # job-wide skip count for the dashboard
            continue
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        if rank == 0 and step % 5 == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    if rank == 0:
        per_step = (time.perf_counter() - started) / args.steps
        print(f"rank 0: {args.steps} steps, {per_step * 1000:.2f} ms per step", flush=True)
    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
