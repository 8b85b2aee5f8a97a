"""Experiment settings for the churn model."""

import argparse
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ExperimentConfig:
    devices: int = 4
    num_nodes: int = 1
    epochs: int = 3
    batch_size: int = 32
    customers: int = 1024
    holdout: int = 512
    hidden: int = 24
    lr: float = 0.05
    calibration_bins: int = 10
    dist_timeout_s: float = 30.0
    seed: int = 11


def from_cli(argv=None) -> ExperimentConfig:
    defaults = asdict(ExperimentConfig())
    parser = argparse.ArgumentParser(description="Train the churn classifier.")
    for key, value in defaults.items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    return ExperimentConfig(**vars(parser.parse_args(argv)))
