"""Data-parallel regression, then a distributed evaluation pass.

Training averages gradients every step. Evaluation shards the validation set
across ranks with a stride, predicts batch by batch and all-gathers
(prediction, label) pairs so every rank can compute the global metric.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
VAL_SIZE = 103


def make_split(seed, n):
    g = torch.Generator().manual_seed(seed)
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


@torch.no_grad()
def evaluate(model, val_x, val_y, rank, world_size, batch_size):
    model.eval()
    shard = TensorDataset(val_x[rank::world_size], val_y[rank::world_size])
    pairs = []
    for xb, yb in DataLoader(shard, batch_size=batch_size):
        local = torch.cat([model(xb), yb], dim=1)
        gathered = [torch.empty_like(local) for _ in range(world_size)]
        dist.all_gather(gathered, local)
        pairs.append(torch.cat(gathered))
    pairs = torch.cat(pairs)
    return F.mse_loss(pairs[:, 0], pairs[:, 1]).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--eval-batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    x, y = make_split(100 + rank, args.steps * args.batch_size)
    val_x, val_y = make_split(99, VAL_SIZE)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(rank))
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for xb, yb in loader:
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()

    val_mse = evaluate(model, val_x, val_y, rank, world_size, args.eval_batch_size)
    if rank == 0:
        print(f"validation mse {val_mse:.4f}", flush=True)
    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
