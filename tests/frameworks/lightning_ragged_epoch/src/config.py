"""Defaults for the next-category model; flags override them."""

import argparse
from dataclasses import dataclass


@dataclass
class Config:
    devices: int = 4
    num_nodes: int = 1
    epochs: int = 2
    categories: int = 20
    history: int = 6
    embed_dim: int = 16
    batch_size: int = 16
    lr: float = 0.05
    export_dir: str = "exports/clicks-2024-05-02"
    dist_timeout_s: float = 30.0
    seed: int = 9


def parse(argv=None) -> Config:
    parser = argparse.ArgumentParser()
    for name, default in vars(Config()).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return Config(**vars(parser.parse_args(argv)))
