"""Run configuration for the review-helpfulness regressor."""

import argparse
from dataclasses import dataclass


@dataclass
class RunConfig:
    output_dir: str = "runs/helpfulness"
    seed: int = 17
    vocab_size: int = 256
    max_length: int = 24
    train_reviews: int = 640
    eval_reviews: int = 96
    batch_size: int = 8
    epochs: int = 1
    lr: float = 3e-4
    logging_steps: int = 4
    eval_steps: int = 8
    dist_timeout_s: int = 30
    # consecutive non-finite local losses before the guard stops the run
    nonfinite_patience: int = 1


def load() -> RunConfig:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=RunConfig.epochs)
    parser.add_argument("--output-dir", default=RunConfig.output_dir)
    ns = parser.parse_args()
    return RunConfig(epochs=ns.epochs, output_dir=ns.output_dir)
