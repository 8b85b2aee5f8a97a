"""Run settings; every field can be overridden on the command line."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    epochs: int = 3
    rows_per_shard: int = 64
    batch: int = 16
    features: int = 8
    hidden: int = 16
    lr: float = 1e-3
    shard_root: str = ""  # default: <tmp>/sensor-shards
    dist_timeout_s: float = 120.0
    seed: int = 17


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="32-way DDP regression on streamed shards.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
