"""Click-through-rate model: run configuration (defaults are the nightly CI run)."""

import argparse
import json
from dataclasses import asdict, dataclass


@dataclass
class CTRConfig:
    seed: int = 3
    known_users: int = 200
    items: int = 120
    train_rows: int = 384
    eval_rows: int = 64
    emb_dim: int = 16
    batch_size: int = 16
    epochs: int = 2
    lr: float = 0.05
    log_every: int = 3
    timeout_s: int = 30
    ckpt_path: str = "ctr_best.pt"


def load() -> CTRConfig:
    p = argparse.ArgumentParser()
    p.add_argument("--config", help="JSON file overriding the defaults")
    p.add_argument("--epochs", type=int)
    ns = p.parse_args()
    cfg = CTRConfig()
    if ns.config:
        with open(ns.config) as f:
            for k, v in json.load(f).items():
                setattr(cfg, k, v)
    if ns.epochs is not None:
        cfg.epochs = ns.epochs
    return cfg


def describe(cfg: CTRConfig) -> str:
    return json.dumps(asdict(cfg), sort_keys=True)
