"""Data-parallel regression with a periodic progress line on rank 0.

Gradients are averaged every step. Every `--log-every` steps rank 0 prints the
mean training loss over the last window, averaged over all ranks.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16


def make_shard(rank, n, seed=1234):
    g = torch.Generator().manual_seed(seed + rank)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


def build_model():
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))


def broadcast_parameters(model):
    for p in model.parameters():
        dist.broadcast(p.data, src=0)


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
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--log-every", type=int, default=5)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    x, y = make_shard(rank, args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(rank))
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    window_loss, window_samples = 0.0, 0
    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()

        window_loss += loss.item() * len(xb)
        window_samples += len(xb)
        if rank == 0 and step % args.log_every == 0:
            window = torch.tensor([window_loss, float(window_samples)])
            dist.all_reduce(window)
            print(f"step {step}: mean train loss {window[0] / window[1]:.4f}", flush=True)
            window_loss, window_samples = 0.0, 0

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
