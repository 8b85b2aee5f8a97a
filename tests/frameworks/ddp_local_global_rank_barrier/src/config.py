"""Run settings for the sensor-anomaly regressor (override with --key value)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    epochs: int = 2
    rows_per_rank: int = 192
    batch_size: int = 32
    channels: int = 8
    window: int = 6
    hidden: int = 48
    lr: float = 2e-3
    cache_dir: str = "/tmp/desync-jobs/sensor-cache"
    dist_timeout_s: float = 30.0
    seed: int = 5


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Sensor anomaly regressor, DDP over Gloo.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
