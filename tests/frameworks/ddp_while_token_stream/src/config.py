"""Command-line configuration for the captioning pretraining job."""

import argparse


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--token-budget", type=int, default=256)
    p.add_argument("--docs-per-shard", type=int, default=120)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
