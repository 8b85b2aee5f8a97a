"""Command-line configuration for the churn-scoring job."""

import argparse


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--features", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=9)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
