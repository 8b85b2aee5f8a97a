"""Command-line configuration."""

import argparse


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train the tariff classifier with DDP.")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--features", type=int, default=20)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--shard-dir", default="shards/tariffs-v3")
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)
