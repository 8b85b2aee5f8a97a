"""Run settings; every field can be overridden with --field value."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class RunConfig:
    devices: int = 4
    num_nodes: int = 1
    epochs: int = 3
    images: int = 512
    val_images: int = 128
    image_size: int = 8
    noise: float = 0.3
    batch_size: int = 16
    lr: float = 3e-3
    snapshot_path: str = "serving/best.ckpt"
    dist_timeout_s: float = 30.0
    seed: int = 2


def load(argv=None) -> RunConfig:
    parser = argparse.ArgumentParser()
    for f in fields(RunConfig):
        parser.add_argument(f"--{f.name}", type=type(f.default), default=f.default)
    return RunConfig(**vars(parser.parse_args(argv)))
