"""Run settings; every field can be overridden with --field value."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class RunConfig:
    devices: int = 4
    num_nodes: int = 1
    epochs: int = 2
    hours_per_turbine: int = 64
    window: int = 12
    batch_size: int = 8
    lr: float = 1e-2
    spike_factor: float = 4.0
    spike_warmup_steps: int = 3
    dist_timeout_s: float = 30.0
    seed: int = 11


def load(argv=None) -> RunConfig:
    parser = argparse.ArgumentParser()
    for f in fields(RunConfig):
        parser.add_argument(f"--{f.name}", type=type(f.default), default=f.default)
    return RunConfig(**vars(parser.parse_args(argv)))
