"""Run settings for the query/intent classifier (ZeRO-2 over Gloo, CPU workers)."""

import argparse
from dataclasses import dataclass, fields


@dataclass
class RunConfig:
    ds_config: str = "ds_config.json"
    epochs: int = 2
    queries_per_rank: int = 96
    vocab: int = 500
    seq_len: int = 12
    d_embed: int = 32
    d_hidden: int = 64
    n_intents: int = 6
    lr: float = 2e-3
    weight_decay: float = 0.01
    ckpt_dir: str = "checkpoints"
    dist_timeout_s: float = 30.0
    seed: int = 11


def parse(argv=None) -> RunConfig:
    parser = argparse.ArgumentParser(description="Intent classifier trained with DeepSpeed ZeRO-2.")
    for f in fields(RunConfig):
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default),
                            default=f.default)
    # deepspeed's launcher passes --local_rank; torchrun-style launches use LOCAL_RANK.
    parser.add_argument("--local_rank", type=int, default=-1)
    args = vars(parser.parse_args(argv))
    args.pop("local_rank")
    return RunConfig(**args)
