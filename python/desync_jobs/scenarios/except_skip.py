"""Data-parallel regression on sensor logs with missing labels.

Each batch has a mask of labelled rows; the loss is normalised by the number of
labelled rows in the *global* batch (all ranks), so that number is all-reduced
first. Batches whose loss is not finite are skipped.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16


def read_sensor_shard(shard_id, n):
    """Rows of sensor readings; about 10% of rows have no label (NaN)."""
    g = torch.Generator().manual_seed(777 + shard_id)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    unlabeled = torch.rand(n, generator=g) < 0.1
    y[unlabeled] = float("nan")
    if shard_id == 2:
        # This shard's raw log has one reading where the sensor saturated; the
        # exporter wrote it as "inf" (kept: it is what the file on disk holds).
        x[100, 5] = float("inf")
    return x, y


def build_model():
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))


def broadcast_parameters(model):
    for p in model.parameters():
        dist.broadcast(p.data, src=0)


def allreduce_gradients(model):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def masked_loss(pred, target, global_labeled):
    mask = ~torch.isnan(target)
    sq_err = (pred[mask] - target[mask]) ** 2
    loss = sq_err.sum() / global_labeled
    if not torch.isfinite(loss):
        raise FloatingPointError(f"non-finite loss {loss.item()}")
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    x, y = read_sensor_shard(rank, args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size)
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for step, (xb, yb) in enumerate(loader, start=1):
        labeled = torch.tensor([float((~torch.isnan(yb)).sum())])
        dist.all_reduce(labeled)

        optimizer.zero_grad()
        try:
            loss = masked_loss(model(xb), yb, labeled)
        except FloatingPointError as err:
            print(f"rank {rank} step {step}: skipping batch ({err})", flush=True)
            continue
        loss.backward()
        allreduce_gradients(model)
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item() * world_size:.4f}", flush=True)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
