"""Run settings for the sensor-calibration model (override with --key value)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    devices: int = 4
    num_nodes: int = 1
    epochs: int = 4
    readings_per_site: int = 384
    channels: int = 4
    batch_size: int = 32
    lr: float = 0.05
    target_loss: float = 0.025
    patience: int = 3
    dist_timeout_s: float = 30.0
    seed: int = 5


def load(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Sensor calibration, Lightning DDP on CPU.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
