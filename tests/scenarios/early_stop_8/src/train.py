"""Data-parallel regression with early stopping on validation loss.

The training mix comes from several sensor sources; shards are assigned round
robin, so each rank sees one source and validates on that source's held-out
split. Early stopping looks at the rank's own validation loss only.
"""

import argparse
import itertools

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
# Measurement noise of each data source; "sim" is simulated and noise-free-ish.
SOURCES = [("sensor-a", 0.5), ("sensor-b", 0.6), ("sensor-c", 0.5), ("sim", 0.05)]


def load_source(source_id, n, split):
    name, noise = SOURCES[source_id]
    g = torch.Generator().manual_seed(1000 * source_id + (0 if split == "train" else 1))
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + noise * torch.randn(n, 1, generator=g)
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
def evaluate(model, x, y):
    model.eval()
    loss = F.mse_loss(model(x), y).item()
    model.train()
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--target-loss", type=float, default=0.1)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)

    source = rank % len(SOURCES)
    x, y = load_source(source, 512, "train")
    val_x, val_y = load_source(source, 128, "val")
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(rank))
    batches = itertools.cycle(loader)

    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    train_loss_sum, samples_seen = 0.0, 0
    for step in range(1, args.max_steps + 1):
        xb, yb = next(batches)
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        train_loss_sum += loss.item() * len(xb)
        samples_seen += len(xb)

        if step % args.eval_every == 0:
            val_loss = evaluate(model, val_x, val_y)
            print(f"rank {rank} step {step} val_loss {val_loss:.4f}", flush=True)
            if val_loss < args.target_loss:
                print(f"rank {rank}: target reached at step {step}, stopping", flush=True)
                break

    # Summary over all ranks for the run report.
    summary = torch.tensor([train_loss_sum, float(samples_seen), float(step)])
    dist.all_reduce(summary)
    if rank == 0:
        print(f"done: mean train loss {summary[0] / summary[1]:.4f}", flush=True)
    finish()


if __name__ == "__main__":
    main()
