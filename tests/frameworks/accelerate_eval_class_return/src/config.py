"""Settings of the wafer-defect classifier run (dataclass defaults, overridable on the CLI)."""

import argparse
from dataclasses import dataclass


@dataclass
class RunConfig:
    features: int = 24
    train_wafers: int = 1024
    holdout_wafers: int = 256
    train_batch: int = 32
    eval_batch: int = 16
    hidden: int = 48
    epochs: int = 3
    lr: float = 2e-3
    dist_timeout_s: float = 30.0
    seed: int = 6


def parse(argv=None) -> RunConfig:
    parser = argparse.ArgumentParser(description="Train the wafer-map defect classifier.")
    for name, value in vars(RunConfig()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return RunConfig(**vars(parser.parse_args(argv)))
