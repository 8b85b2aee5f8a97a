"""Run settings for the tiny language model; every field can be overridden on the command line."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class TrainConfig:
    epochs: int = 2
    docs_per_rank: int = 96
    micro_batch: int = 8
    tokens_per_update: int = 1100  # one optimizer update per this many tokens
    vocab: int = 64
    d_model: int = 32
    heads: int = 4
    max_len: int = 64
    lr: float = 3e-3
    clip: float = 1.0
    dist_timeout_s: float = 30.0
    seed: int = 7


def parse(argv=None) -> TrainConfig:
    parser = argparse.ArgumentParser(description="Tiny causal LM, DDP, token-budget accumulation.")
    for f in fields(TrainConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return TrainConfig(**vars(parser.parse_args(argv)))
