"""Two-node data-parallel training with hierarchical gradient averaging.

Gradients are first averaged inside each node on a node-local group
(``new_subgroups``), then across all ranks; every few steps rank 0 broadcasts the
learning rate: each rank's plateau scheduler proposes one and the ranks take
the smallest (an all_reduce MIN). Midway, the second node is lost (its host goes down: every
process on it is killed at once, no handler runs and no dump is written), while
the first node's ranks are already inside the learning-rate all_reduce.
"""

import argparse
import os
import signal
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


def hierarchical_average(model, node_group, node_size, world_size):
    """Mean over the node first (cheap, intra-host), then over all ranks."""
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=node_group)
    flat /= node_size
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


class Host:
    """What the job can observe of the machine it runs on (here: whether the
    node's power supply is about to fail, from the node's environment)."""

    def __init__(self):
        self.fails_at_step = int(os.environ.get("NODE_FAILS_AT_STEP", "0"))

    def tick(self, step):
        if self.fails_at_step and step == self.fails_at_step:
            time.sleep(1.5)  # the peers are inside the next collective by now
            os.kill(os.getpid(), signal.SIGKILL)  # the host goes down


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--lr-every", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    ctx = init_distributed()
    rank, world_size = ctx.rank, ctx.world_size
    node_size = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    node_group, _ = dist.new_subgroups(group_size=node_size)
    torch.manual_seed(rank)
    host = Host()

    model = build_model()
    broadcast_parameters(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    x, y = make_shard(rank, args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size)

    for step, (xb, yb) in enumerate(loader, start=1):
        loss = F.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        hierarchical_average(model, node_group, node_size, world_size)
        optimizer.step()
        host.tick(step)
        if step % args.lr_every == 0:
            lr = torch.tensor([0.02 * 0.9 ** (step // args.lr_every)])
            dist.all_reduce(lr, op=dist.ReduceOp.MIN)
            for group in optimizer.param_groups:
                group["lr"] = float(lr)

    dist.barrier()
    finish()


if __name__ == "__main__":
    main()
