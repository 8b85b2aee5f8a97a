"""Run settings; every field can be overridden on the command line."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class RunConfig:
    steps: int = 10
    batch: int = 16
    channels: int = 6
    window: int = 8
    hidden: int = 32
    log_every: int = 5
    lr: float = 1e-3
    dist_timeout_s: float = 30.0
    seed: int = 5


def parse(argv=None) -> RunConfig:
    parser = argparse.ArgumentParser(description="Vibration anomaly model, hierarchical all-reduce.")
    for f in fields(RunConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    return RunConfig(**vars(parser.parse_args(argv)))
