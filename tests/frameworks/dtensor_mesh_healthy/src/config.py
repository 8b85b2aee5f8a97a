import argparse
from dataclasses import dataclass


@dataclass
class ParallelConfig:
    dp: int = 2
    tp: int = 2
    dim: int = 16
    hidden: int = 32
    batch_size: int = 8
    steps: int = 12
    log_every: int = 3
    lr: float = 1e-2
    dist_timeout_s: float = 30.0


def parse(argv=None) -> ParallelConfig:
    parser = argparse.ArgumentParser(description="2-D (data x tensor) parallel regression.")
    for key, value in vars(ParallelConfig()).items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    return ParallelConfig(**vars(parser.parse_args(argv)))
