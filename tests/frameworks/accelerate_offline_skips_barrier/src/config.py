"""Run configuration (dataclass defaults, overridable from the command line)."""

import argparse
from dataclasses import dataclass


@dataclass
class Config:
    features: int = 8
    rows: int = 512
    batch_size: int = 64
    epochs: int = 2
    lr: float = 0.05
    dist_timeout_s: float = 30.0
    seed: int = 21


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser()
    for name, value in vars(Config()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return Config(**vars(parser.parse_args(argv)))
