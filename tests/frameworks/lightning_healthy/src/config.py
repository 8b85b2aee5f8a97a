"""Run configuration: command-line flags with the defaults the team trains with."""

import argparse
from dataclasses import dataclass


@dataclass
class TrainConfig:
    devices: int = 4
    num_nodes: int = 1
    max_epochs: int = 2
    batch_size: int = 16
    train_rows: int = 512
    val_rows: int = 256
    hidden: int = 32
    lr: float = 0.05
    dist_timeout_s: float = 30.0
    output_dir: str = "runs"
    seed: int = 7


def parse_args(argv=None) -> TrainConfig:
    defaults = TrainConfig()
    parser = argparse.ArgumentParser(description="Train the demand regressor.")
    for name, value in vars(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    return TrainConfig(**vars(parser.parse_args(argv)))
