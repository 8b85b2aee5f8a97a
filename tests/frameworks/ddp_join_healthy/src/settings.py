import argparse


def parse(argv=None):
    p = argparse.ArgumentParser(description="Building energy regression on uneven site shards.")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
