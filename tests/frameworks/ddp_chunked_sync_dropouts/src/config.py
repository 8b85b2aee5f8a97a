"""Command-line configuration for the sensor forecasting job."""

import argparse


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--features", type=int, default=8)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--batch", type=int, default=16)
    # 4 days of hourly drift readings plus the closing reading, synced 24 at a time
    p.add_argument("--readings", type=int, default=97)
    p.add_argument("--sync-chunk", type=int, default=24)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
