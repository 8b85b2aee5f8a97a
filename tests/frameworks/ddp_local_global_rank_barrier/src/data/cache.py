"""Windowed sensor features, computed once per host and cached on its local disk."""

import os
from pathlib import Path

import torch
import torch.distributed as dist


def _windows(n: int, channels: int, window: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    raw = torch.randn(n + window, channels, generator=g).cumsum(0) * 0.1
    x = torch.stack([raw[i:i + window].flatten() for i in range(n)])
    y = raw[window:window + n, 0] - raw[window - 1:window - 1 + n, 0]
    return {"x": x, "y": y}


def build_cache(cfg, env) -> dict:
    """The host's first process writes the cache; the others wait, then read it."""
    path = Path(cfg.cache_dir) / f"node{env.node}-w{cfg.window}.pt"
    if env.local_rank != 0:
        dist.barrier()  # wait for this host's leader to write the cache
    if not path.exists() or env.local_rank == 0:
        os.makedirs(path.parent, exist_ok=True)
        torch.save(_windows(cfg.rows_per_rank * env.world, cfg.channels, cfg.window, cfg.seed),
                   path)
        print(f"rank {env.rank}: wrote feature cache for node {env.node}", flush=True)
    if env.rank == 0:
        dist.barrier()  # release the processes waiting for the cache
    return torch.load(path)
