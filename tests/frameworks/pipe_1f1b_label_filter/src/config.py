"""Run settings: 2 pipeline stages x 2 data-parallel replicas (4 processes)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class PipeConfig:
    stages: int = 2
    steps: int = 10
    batch: int = 8
    micro_size: int = 2
    features: int = 12
    hidden: int = 48
    lr: float = 2e-3
    dist_timeout_s: float = 30.0
    seed: int = 3


def parse(argv=None) -> PipeConfig:
    parser = argparse.ArgumentParser(description="1F1B regression over 2 stages x 2 replicas.")
    for f in fields(PipeConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return PipeConfig(**vars(parser.parse_args(argv)))
