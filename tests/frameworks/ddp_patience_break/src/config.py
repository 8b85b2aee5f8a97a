"""Settings shared by the training entry point and the engine."""

import argparse

PATIENCE = 2  # epochs without validation improvement before stopping


def cli(argv=None):
    p = argparse.ArgumentParser(description="Price-elasticity regression with DDP.")
    p.add_argument("--max-epochs", type=int, default=8)
    p.add_argument("--train-rows", type=int, default=256)
    p.add_argument("--val-rows", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--min-delta", type=float, default=0.0)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args(argv)
