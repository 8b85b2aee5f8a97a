"""Feature tables: built once by the main process (the others wait, then reuse its cache) or,
on hosts without access to the feature store, rebuilt locally from the bundled snapshot."""

import os
import tempfile
from pathlib import Path

import torch
from torch.utils.data import TensorDataset


def _build(rows: int, features: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, features, generator=g)
    return {"x": x, "y": (x[:, :2].sum(dim=1, keepdim=True) > 0).float()}


def feature_table(accelerator, cfg) -> TensorDataset:
    if os.environ.get("FEATURE_STORE_OFFLINE") == "1":
        table = _build(cfg.rows, cfg.features, cfg.seed)
        return TensorDataset(table["x"], table["y"])
    cache = Path(tempfile.gettempdir()) / f"feature-cache-{cfg.seed}-{os.getppid()}.pt"
    if not accelerator.is_main_process:
        accelerator.wait_for_everyone()
    if accelerator.is_main_process and not cache.exists():
        torch.save(_build(cfg.rows, cfg.features, cfg.seed), cache)
    table = torch.load(cache)
    if accelerator.is_main_process:
        accelerator.wait_for_everyone()
    return TensorDataset(table["x"], table["y"])
