"""Pretraining run configuration."""

import argparse
from dataclasses import dataclass


@dataclass
class PretrainConfig:
    seed: int = 23
    vocab: int = 128
    dim: int = 32
    context: int = 64
    batch_size: int = 8
    steps: int = 16
    lr: float = 1e-3
    log_every: int = 4
    # write a resumable checkpoint every this many training tokens
    ckpt_every_tokens: int = 1500
    timeout_s: int = 30
    ckpt_dir: str = "ckpt"


def parse() -> PretrainConfig:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=PretrainConfig.steps)
    p.add_argument("--ckpt-every-tokens", type=int, default=PretrainConfig.ckpt_every_tokens)
    ns = p.parse_args()
    return PretrainConfig(steps=ns.steps, ckpt_every_tokens=ns.ckpt_every_tokens)
