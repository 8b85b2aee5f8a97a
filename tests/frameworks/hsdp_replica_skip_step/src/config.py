"""Run settings for the HSDP sensor model; every field can be overridden on the command line."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class RunConfig:
    steps: int = 8
    batch: int = 8
    features: int = 12
    hidden: int = 24
    blocks: int = 2
    replicate: int = 2
    lr: float = 1e-2
    dist_timeout_s: float = 30.0
    seed: int = 3


def parse(argv=None) -> RunConfig:
    parser = argparse.ArgumentParser(description="Sensor regressor trained with HSDP.")
    for f in fields(RunConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return RunConfig(**vars(parser.parse_args(argv)))
