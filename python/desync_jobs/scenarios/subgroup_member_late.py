"""Data-parallel regression with a separate metrics process group.

Training metrics (loss sum, sample count, wall time per step) are reduced on their
own process group, created once at setup, so that metric traffic never queues
behind gradient buckets. Before reducing, each rank's exporter takes the host's
export lock: the same lock its checkpoint uploader holds while it pushes the last
checkpoint to object storage. On one host the upload of the previous checkpoint
never finishes (a hung object-store connection), so that rank's exporter waits on
the lock and never reaches the metrics all_reduce its peers are blocked in.
"""

import argparse
import os
import threading
import time

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


class CheckpointUploader:
    """Pushes checkpoints to object storage in the background, holding the host's
    export lock while a push is in progress."""

    def __init__(self, export_lock, endpoint):
        self.export_lock = export_lock
        self.endpoint = endpoint

    def push(self, name):
        threading.Thread(target=self._push, args=(name,), daemon=True).start()

    def _push(self, name):
        with self.export_lock:
            # A connection to a dead object-store node: the client retries forever.
            while self.endpoint.endswith("-stale"):
                time.sleep(0.5)


class MetricsExporter:
    def __init__(self, export_lock, group, world_size):
        self.export_lock = export_lock
        self.group = group
        self.world_size = world_size

    def report(self, step, loss_sum, samples, seconds):
        with self.export_lock:
            stats = torch.tensor([loss_sum, float(samples), seconds])
            dist.all_reduce(stats, group=self.group)
        return stats[0] / stats[1], stats[2] / self.world_size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--report-every", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)
    metrics_group = dist.new_group(ranks=list(range(world_size)))
    export_lock = threading.Lock()
    uploader = CheckpointUploader(export_lock, os.environ.get("OBJECT_STORE", "s3-main"))
    exporter = MetricsExporter(export_lock, metrics_group, world_size)

    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    x, y = make_shard(rank, args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size)

    loss_sum, samples, started = 0.0, 0, time.monotonic()
    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        loss_sum += loss.item() * len(xb)
        samples += len(xb)
        if step == 2:
            uploader.push(f"step-{step}.pt")
            time.sleep(0.2)
        if step % args.report_every == 0:
            mean_loss, seconds = exporter.report(step, loss_sum, samples,
                                                 time.monotonic() - started)
            if rank == 0:
                print(f"step {step}: loss {mean_loss:.4f}, {seconds:.2f} s", flush=True)
            loss_sum, samples, started = 0.0, 0, time.monotonic()

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
