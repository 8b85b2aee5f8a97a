"""Per-epoch training shards: written by a background prefetcher, read by the training loop.

Epoch e's shard for rank r lives at <root>/epoch<e>/part-<r>.pt. Epoch 0 is written before
training starts; while epoch e trains, a thread re-shuffles and writes epoch e + 1.
"""

import json
import tempfile
import threading
import time
from pathlib import Path

import torch

from data.raw import export_lines


def shard_path(root: Path, epoch: int, rank: int) -> Path:
    return root / f"epoch{epoch}" / f"part-{rank:05d}.pt"


def default_root(cfg) -> Path:
    return Path(cfg.shard_root) if cfg.shard_root else Path(tempfile.gettempdir()) / "sensor-shards"


def write_shard(root: Path, epoch: int, rank: int, cfg) -> None:
    records = [json.loads(line) for line in
               export_lines(rank, epoch, cfg.rows_per_shard, cfg.features, cfg.seed)]
    x = torch.tensor([r["x"] for r in records])
    y = torch.tensor([r["y"] for r in records])
    perm = torch.randperm(len(records), generator=torch.Generator().manual_seed(epoch))
    path = shard_path(root, epoch, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"x": x[perm], "y": y[perm]}, tmp)
    tmp.rename(path)  # readers never see a half-written shard


def _prefetch_worker(root: Path, epoch: int, rank: int, cfg) -> None:
    try:
        write_shard(root, epoch, rank, cfg)
    except Exception as exc:  # a background thread: report, never kill the trainer
        print(f"rank {rank}: prefetch of epoch {epoch} failed: {type(exc).__name__}: {exc}",
              flush=True)


def prefetch(root: Path, epoch: int, rank: int, cfg) -> threading.Thread:
    thread = threading.Thread(target=_prefetch_worker, args=(root, epoch, rank, cfg),
                              name=f"prefetch-epoch{epoch}", daemon=True)
    thread.start()
    return thread


def wait_for_shard(path: Path, poll_s: float = 0.5) -> dict:
    """Block until the prefetcher has written the shard (it is usually already there)."""
    while not path.exists():
        time.sleep(poll_s)
    return torch.load(path)


def clear_own_shards(root: Path, rank: int, epochs: int) -> None:
    for epoch in range(epochs):
        shard_path(root, epoch, rank).unlink(missing_ok=True)
