import argparse


def parse(argv=None):
    p = argparse.ArgumentParser(description="Audio event classifier, FSDP2 on CPU.")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--export-every", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--export-path", default="serving/audio_events.pt")
    p.add_argument("--dist-timeout-s", type=float, default=30.0)
    return p.parse_args(argv)
