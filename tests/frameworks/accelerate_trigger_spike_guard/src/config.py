"""Run configuration (dataclass defaults, overridable from the command line)."""

import argparse
from dataclasses import dataclass


@dataclass
class Config:
    features: int = 12
    rows_per_shard: int = 640
    batch_size: int = 32
    lr: float = 0.02
    spike_factor: float = 25.0
    warmup_steps: int = 4
    dist_timeout_s: float = 30.0
    seed: int = 11


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser()
    for name, value in vars(Config()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return Config(**vars(parser.parse_args(argv)))
