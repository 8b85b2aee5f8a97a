import argparse


def parse(argv=None):
    p = argparse.ArgumentParser(description="Tabular classifier with sharded checkpoints.")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--save-every", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--checkpoint-dir", default="checkpoints")
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
