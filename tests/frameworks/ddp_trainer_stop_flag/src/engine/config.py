"""Run configuration, read from a JSON file every rank loads alike."""

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class RunConfig:
    seed: int
    window: int
    batch_size: int
    max_steps: int
    lr: float
    patience: int
    target_loss: float
    dist_timeout_s: int


def load_config(path):
    with open(path) as f:
        return RunConfig(**json.load(f))
