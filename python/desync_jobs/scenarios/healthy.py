"""Data-parallel training of a small regression MLP, gradients averaged by hand.

Every rank trains on its own shard, all ranks issue the same collectives in the
same order: parameter broadcast, per-step gradient and loss all_reduce, a final
all_gather of validation predictions and a barrier. Nothing goes wrong.
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
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    x, y = make_shard(rank, 256)
    val_x, val_y = make_shard(rank + 1000, 64)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(rank))

    step = 0
    for epoch in range(args.epochs):
        for xb, yb in loader:
            step += 1
            loss = F.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            allreduce_gradients(model, world_size)
            optimizer.step()

            stats = torch.tensor([loss.item() * len(xb), float(len(xb))])
            dist.all_reduce(stats)
            if rank == 0 and step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {stats[0] / stats[1]:.4f}", flush=True)

    model.eval()
    with torch.no_grad():
        preds = model(val_x)
    gathered = [torch.empty_like(preds) for _ in range(world_size)]
    dist.all_gather(gathered, preds)
    if rank == 0:
        print(f"validation predictions gathered: {torch.cat(gathered).shape[0]}", flush=True)
    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
