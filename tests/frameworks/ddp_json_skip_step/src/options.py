import argparse


def parse(argv=None):
    p = argparse.ArgumentParser(description="Turbine telemetry regression, one shard per rank.")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--bucket-cap-mb", type=float, default=0.01)
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
