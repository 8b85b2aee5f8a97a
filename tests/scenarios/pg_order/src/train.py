"""2-D parallel regression: a 2 x (world/2) mesh of tensor- and data-parallel groups.

The first layer is replicated inside each tensor-parallel ("tp") group and its
gradients are summed there (a sequence-parallel style reduction); then all
gradients are averaged over the data-parallel ("dp") group.
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
TP = 2


def make_shard(dp_rank, n, seed=2024):
    g = torch.Generator().manual_seed(seed + dp_rank)
    x = torch.randn(n, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


def build_model():
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))


def build_mesh(rank, world_size, timeout):
    """Every rank creates every group, in the same order (new_group requires it)."""
    tp_group = dp_group = None
    for dp_rank in range(world_size // TP):
        ranks = [dp_rank * TP + t for t in range(TP)]
        group = dist.new_group(ranks, timeout=timeout, group_desc="tp")
        if rank in ranks:
            tp_group = group
    for tp_rank in range(TP):
        ranks = list(range(tp_rank, world_size, TP))
        group = dist.new_group(ranks, timeout=timeout, group_desc="dp")
        if rank in ranks:
            dp_group = group
    return tp_group, dp_group


def allreduce_(params, group, average):
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    if average:
        flat /= dist.get_world_size(group)
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def reduce_gradients(model, step, args, tp_group, dp_group, tp_rank, dp_rank):
    reductions = [
        (tp_group, list(model[0].parameters()), False),
        (dp_group, list(model.parameters()), True),
    ]
    if step > args.warmup_steps and (tp_rank + dp_rank) % 2 == 1:
        # Once past warmup, alternate the order on neighbouring ranks so the two
        # reductions overlap on the links instead of queueing behind each other.
        reductions.reverse()
    for group, params, average in reductions:
        allreduce_(params, group, average)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    tp_rank, dp_rank = rank % TP, rank // TP
    tp_group, dp_group = build_mesh(rank, world_size, ctx.timeout)
    torch.manual_seed(0)

    model = build_model()
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    x, y = make_shard(dp_rank, args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size)

    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        reduce_gradients(model, step, args, tp_group, dp_group, tp_rank, dp_rank)
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
