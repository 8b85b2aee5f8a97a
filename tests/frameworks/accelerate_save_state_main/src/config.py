"""Training configuration for the two-tower recommender."""

import argparse
from dataclasses import dataclass


@dataclass
class TrainConfig:
    users: int = 300
    items: int = 200
    dim: int = 16
    interactions: int = 4096
    batch_size: int = 64
    max_steps: int = 30
    checkpoint_every: int = 5
    lr: float = 0.05
    output_dir: str = "runs/two-tower"
    dist_timeout_s: float = 30.0
    seed: int = 17


def get_config(argv=None) -> TrainConfig:
    parser = argparse.ArgumentParser()
    for key, value in vars(TrainConfig()).items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    return TrainConfig(**vars(parser.parse_args(argv)))
