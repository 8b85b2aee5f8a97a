"""Settings for the commit-message language model."""

import argparse
from dataclasses import dataclass


@dataclass
class Settings:
    output_dir: str = "runs/commitlm"
    seed: int = 5
    vocab_size: int = 192
    context: int = 32
    train_messages: int = 384
    eval_messages: int = 70
    batch_size: int = 8
    epochs: int = 2
    lr: float = 5e-4
    logging_steps: int = 3
    eval_steps: int = 6
    dist_timeout_s: int = 30


def parse() -> Settings:
    parser = argparse.ArgumentParser(description="train a tiny LM on commit messages")
    parser.add_argument("--epochs", type=int, default=Settings.epochs)
    parser.add_argument("--lr", type=float, default=Settings.lr)
    ns = parser.parse_args()
    return Settings(epochs=ns.epochs, lr=ns.lr)
