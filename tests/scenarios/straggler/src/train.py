"""Data-parallel regression where each rank streams its shard from storage.

Shards live on different storage tiers; a rank whose shard sits on the cold
tier pays the tier's read latency for every batch. Nothing hangs: every
collective completes, one rank just always arrives last.
"""

import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
BATCH = 32
# Read latency per batch (seconds) of the tier each shard was placed on.
TIER_LATENCY = {"hot": 0.0, "cold": 0.25}
SHARD_TIER = {0: "hot", 1: "hot", 2: "cold", 3: "hot"}


class StreamingShard(IterableDataset):
    def __init__(self, shard, batches):
        self.shard, self.batches = shard, batches
        self.latency = TIER_LATENCY[SHARD_TIER.get(shard % 4, "hot")]

    def __iter__(self):
        g = torch.Generator().manual_seed(555 + self.shard)
        w = torch.linspace(-1.0, 1.0, FEATURES)
        for _ in range(self.batches):
            time.sleep(self.latency)  # fetch the next block from the tier
            x = torch.randn(BATCH, FEATURES, generator=g)
            y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(BATCH, 1, generator=g)
            yield x, y


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
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    loader = DataLoader(StreamingShard(rank, args.steps), batch_size=None)
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()

        stats = torch.tensor([loss.item(), 1.0])
        dist.all_reduce(stats)
        if rank == 0:
            print(f"step {step}: mean loss {stats[0] / stats[1]:.4f}", flush=True)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
