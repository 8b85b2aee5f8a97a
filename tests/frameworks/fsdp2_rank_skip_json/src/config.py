"""Experiment configuration for the small FSDP2 language model."""

import argparse
from dataclasses import dataclass


@dataclass
class LMConfig:
    vocab: int = 64
    dim: int = 32
    layers: int = 2
    context: int = 8
    batch_size: int = 8
    steps: int = 10
    lr: float = 3e-3
    dist_timeout_s: float = 30.0
    seed: int = 0


def parse(argv=None) -> LMConfig:
    parser = argparse.ArgumentParser()
    for key, value in vars(LMConfig()).items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    return LMConfig(**vars(parser.parse_args(argv)))
