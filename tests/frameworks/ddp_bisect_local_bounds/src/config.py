"""Command-line configuration for the alerting model."""

import argparse


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--features", type=int, default=6)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=8)
    p.add_argument("--alert-rate", type=float, default=0.05)
    p.add_argument("--tolerance", type=float, default=1e-3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
