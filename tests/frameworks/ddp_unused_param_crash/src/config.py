"""Run settings for the ticket triage classifier (override with --key value)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class Config:
    epochs: int = 2
    tickets_per_rank: int = 160
    batch_size: int = 16
    vocab: int = 400
    doc_len: int = 24
    meta_features: int = 6
    d_model: int = 48
    n_queues: int = 5
    lr: float = 1e-3
    dist_timeout_s: float = 30.0
    seed: int = 3


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser(description="Support-ticket triage, DDP over Gloo.")
    for f in fields(Config):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return Config(**vars(parser.parse_args(argv)))
