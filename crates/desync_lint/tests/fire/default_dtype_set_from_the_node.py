# expect: DSY006 at line 19
"""Restoring is not changing: here the value handed to `torch.set_default_dtype` is not one
`torch.get_default_dtype()` read before a change but a dtype each node picks from its own
environment, so the ranks of a node launched with `TRAIN_BF16=1` build their buffers (and
all-reduce them) in bfloat16 while their peers use float32.
(The restore of a saved default is quiet: quiet/default_dtype_restored_after_loading.py.)"""
import os

import torch
import torch.distributed as dist


def node_dtype():
    return torch.bfloat16 if os.environ.get("TRAIN_BF16") == "1" else torch.float32


def build_buffers(sizes):
    saved = node_dtype()
    if os.environ.get("TRAIN_BF16") == "1":
        torch.set_default_dtype(saved)
    buffers = [torch.zeros(n) for n in sizes]
    for b in buffers:
        dist.all_reduce(b)
    return buffers
