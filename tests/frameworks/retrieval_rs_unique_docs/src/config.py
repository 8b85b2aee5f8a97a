"""Run settings for the hard-negative miner; every field can be overridden on the command line."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class MinerConfig:
    steps: int = 8
    batch: int = 8
    dim: int = 16
    anchors: int = 12
    lr: float = 5e-2
    dist_timeout_s: float = 30.0
    seed: int = 5


def parse(argv=None) -> MinerConfig:
    parser = argparse.ArgumentParser(description="Contrastive retriever with sharded negative tables.")
    for f in fields(MinerConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return MinerConfig(**vars(parser.parse_args(argv)))
