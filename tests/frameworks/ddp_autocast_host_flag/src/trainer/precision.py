"""Mixed precision where the host supports it."""

import contextlib

import torch


def autocast_for(cfg):
    if cfg.bf16:
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
