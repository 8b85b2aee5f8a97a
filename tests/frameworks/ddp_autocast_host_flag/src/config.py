"""Run configuration: flags for the experiment, environment for the host."""

import argparse
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Config:
    steps: int
    batch_size: int
    lr: float
    drift_every: int
    dist_timeout_s: float
    # Hosts whose CPUs have native bf16 set TRAIN_BF16=1 in their environment.
    bf16: bool


def load_config(argv=None) -> Config:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--drift-every", type=int, default=4)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    args = p.parse_args(argv)
    return Config(**vars(args), bf16=os.environ.get("TRAIN_BF16", "0") == "1")
