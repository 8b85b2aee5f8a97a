"""Command-line settings of the vibration-anomaly autoencoder."""

import argparse


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--devices", type=int, default=4, help="processes per host")
    p.add_argument("--num-nodes", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--windows", type=int, default=1024, help="training windows in the export")
    p.add_argument("--window-len", type=int, default=32)
    p.add_argument("--bottleneck", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--host-report-every", type=int, default=3,
                   help="batches between per-host loader reports")
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=5)
    return p.parse_args(argv)
