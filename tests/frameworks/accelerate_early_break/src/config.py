"""Run configuration (dataclass defaults, overridable from the command line)."""

import argparse
from dataclasses import dataclass


@dataclass
class Config:
    features: int = 16
    rows_per_shard: int = 4096
    batch_size: int = 32
    lr: float = 0.05
    target_loss: float = 0.02
    dist_timeout_s: float = 30.0
    seed: int = 4


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser()
    for name, value in vars(Config()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return Config(**vars(parser.parse_args(argv)))
