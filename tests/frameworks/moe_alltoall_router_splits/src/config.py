"""Run settings for the expert-parallel toy LM; every field can be overridden on the command line."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class MoEConfig:
    steps: int = 12
    batch: int = 4
    seq_len: int = 16
    vocab: int = 96
    d_model: int = 16
    d_ff: int = 32
    capacity_factor: float = 1.25
    lr: float = 1e-2
    dist_timeout_s: float = 30.0
    seed: int = 11


def parse(argv=None) -> MoEConfig:
    parser = argparse.ArgumentParser(description="Top-1 MoE LM, one expert per rank.")
    for f in fields(MoEConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return MoEConfig(**vars(parser.parse_args(argv)))
