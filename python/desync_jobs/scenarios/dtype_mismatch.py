"""Data-parallel regression with optional low-precision gradient communication.

After a short fp32 warmup, gradients are all-reduced in the communication dtype
taken from the node's launcher environment (GRAD_COMM_DTYPE, default fp32), to
halve the bytes on the wire where the operator turned it on.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from desync_jobs.harness import finish, init_distributed

FEATURES = 16
COMM_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


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


def allreduce_gradients(model, world_size, comm_dtype):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads]).to(comm_dtype)
    dist.all_reduce(flat)
    flat = flat.float() / world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    torch.manual_seed(rank)
    comm_dtype = COMM_DTYPES[os.environ.get("GRAD_COMM_DTYPE", "fp32")]

    x, y = make_shard(rank, args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(rank))
    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        dtype = torch.float32 if step <= args.warmup_steps else comm_dtype
        allreduce_gradients(model, world_size, dtype)
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
