"""Run settings for the transaction-fraud scorer (override with --key value)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    epochs: int = 3
    train_per_rank: int = 256
    holdout_per_rank: int = 64
    batch_size: int = 32
    features: int = 12
    hidden: int = 64
    lr: float = 3e-3
    dist_timeout_s: float = 30.0
    seed: int = 17


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Fraud scorer, DDP over Gloo.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
