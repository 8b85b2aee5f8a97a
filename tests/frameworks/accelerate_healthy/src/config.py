"""Hyper-parameters and run settings (flags override the defaults)."""

import argparse
from dataclasses import dataclass


@dataclass
class Config:
    vocab: int = 500
    embed_dim: int = 32
    classes: int = 3
    seq_len: int = 24
    train_docs: int = 1024
    eval_docs: int = 203
    batch_size: int = 16
    epochs: int = 2
    lr: float = 0.1
    dist_timeout_s: float = 30.0
    project_dir: str = "outputs"
    seed: int = 3


def parse_args(argv=None) -> Config:
    base = Config()
    parser = argparse.ArgumentParser()
    for key, value in vars(base).items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    return Config(**vars(parser.parse_args(argv)))
