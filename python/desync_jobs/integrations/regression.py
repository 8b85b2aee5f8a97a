"""A small data-parallel regression job whose training shards live on a network mount.

Shared by the integration jobs (plain torchrun, desync.torch.enable(), Lightning,
Accelerate). Each rank reads its own shard, one chunk per step. One chunk of one shard can
sit on a server that stopped answering: like a hard-mounted NFS read, the read does not fail,
it blocks (``--stall-rank``/``--stall-step``). That rank never reaches the step's gradient
all_reduce; its peers wait in it until the process group's timeout.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn

FEATURES = 16
BATCH = 32


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--stall-rank", type=int, default=-1, help="rank whose shard hangs (-1: none)")
    p.add_argument("--stall-step", type=int, default=4)
    p.add_argument("--pg-timeout", type=float, default=10.0, help="collective timeout, seconds")
    p.add_argument("--lr", type=float, default=0.05)
    return p


class ShardStore:
    """Chunks ``part-<rank>-<step>`` of each rank's shard; one may be unreachable."""

    def __init__(self, unreachable: set[str]) -> None:
        self.unreachable = unreachable

    def read(self, rank: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        name = f"part-{rank}-{step:03d}"
        while name in self.unreachable:
            time.sleep(0.5)  # nfs: server not responding, still trying
        g = torch.Generator().manual_seed(1000 * rank + step)
        x = torch.randn(BATCH, FEATURES, generator=g)
        w = torch.linspace(-1.0, 1.0, FEATURES)
        y = (x @ w).unsqueeze(1) + 0.05 * torch.randn(BATCH, 1, generator=g)
        return x, y


def shard_store(args: argparse.Namespace) -> ShardStore:
    bad = {f"part-{args.stall_rank}-{args.stall_step:03d}"} if args.stall_rank >= 0 else set()
    return ShardStore(bad)


def build_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))
