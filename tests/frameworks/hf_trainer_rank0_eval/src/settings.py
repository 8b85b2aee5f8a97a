"""Experiment settings for the news topic classifier."""

import argparse
from dataclasses import dataclass


@dataclass
class Experiment:
    output_dir: str = "runs/newsclf"
    seed: int = 11
    vocab_size: int = 300
    seq_len: int = 20
    num_topics: int = 4
    train_articles: int = 256
    eval_articles: int = 64
    ood_articles: int = 40   # forum posts: same topics, other register
    batch_size: int = 8
    epochs: int = 2
    lr: float = 2e-4
    logging_steps: int = 4
    eval_steps: int = 6
    dist_timeout_s: int = 30


def from_cli() -> Experiment:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=Experiment.epochs)
    parser.add_argument("--seed", type=int, default=Experiment.seed)
    ns = parser.parse_args()
    return Experiment(epochs=ns.epochs, seed=ns.seed)
