"""Data-parallel regression reading its training shard from chunk files on NFS.

Each rank reads only its own shard: chunk files `part-<rank>-<chunk>` on a
shared mount, one chunk per batch, through a map-style Dataset.
"""

import argparse
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
CHUNK = 32


class SimulatedNFS:
    """Stands in for a hard-mounted NFS export: a read of a file whose server
    stopped answering does not fail, it blocks (the client retries forever).
    Here one chunk file sits on such a server."""

    UNRESPONSIVE = {"part-2-003"}

    def read(self, name):
        while name in self.UNRESPONSIVE:
            time.sleep(1.0)  # nfs: server not responding, still trying
        shard, chunk = (int(v) for v in name.split("-")[1:])
        g = torch.Generator().manual_seed(10_000 * shard + chunk)
        x = torch.randn(CHUNK, FEATURES, generator=g)
        w = torch.linspace(-1.0, 1.0, FEATURES)
        y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(CHUNK, 1, generator=g)
        return x, y


class ChunkedShard(Dataset):
    def __init__(self, fs, shard, num_chunks):
        self.fs, self.shard, self.num_chunks = fs, shard, num_chunks
        self._cache = {}

    def __len__(self):
        return self.num_chunks * CHUNK

    def __getitem__(self, idx):
        chunk = idx // CHUNK
        if chunk not in self._cache:
            self._cache = {chunk: self.fs.read(f"part-{self.shard}-{chunk:03d}")}
        x, y = self._cache[chunk]
        return x[idx % CHUNK], y[idx % CHUNK]


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
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    loader = DataLoader(ChunkedShard(SimulatedNFS(), rank, args.chunks), batch_size=CHUNK)
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
