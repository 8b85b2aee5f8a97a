"""Run settings for the intent classifier (override with --key value)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    epochs: int = 2
    utterances_per_rank: int = 160
    batch_size: int = 16
    vocab_size: int = 400
    embed: int = 32
    lr: float = 5e-3
    dist_timeout_s: float = 30.0
    seed: int = 11


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Intent classifier, DDP over Gloo.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
