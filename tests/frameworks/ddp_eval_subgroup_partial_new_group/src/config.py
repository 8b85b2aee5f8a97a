"""Run settings for the churn ranker (override with --key value)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    epochs: int = 2
    rows_per_rank: int = 128
    holdout_rows: int = 96
    eval_ranks: int = 2  # the first N ranks score the holdout set
    batch_size: int = 32
    features: int = 10
    hidden: int = 32
    lr: float = 3e-3
    dist_timeout_s: float = 30.0
    seed: int = 23


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Churn ranker, DDP over Gloo.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
