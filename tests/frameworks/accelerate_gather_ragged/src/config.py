"""Settings of the load-forecasting run."""

import argparse
from dataclasses import dataclass


@dataclass
class Settings:
    lookback: int = 12
    train_series: int = 768
    holdout_series: int = 101
    batch_size: int = 8
    epochs: int = 1
    lr: float = 0.01
    dist_timeout_s: float = 30.0
    seed: int = 21


def parse_settings(argv=None) -> Settings:
    parser = argparse.ArgumentParser(description="Train and evaluate the load forecaster.")
    for key, value in vars(Settings()).items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value)
    return Settings(**vars(parser.parse_args(argv)))
