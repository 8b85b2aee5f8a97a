# expect: DSY006 at line 22
"""The annotation tells a device from a dtype: `comm_dtype()` returns a `torch.dtype` read from
each node's environment, so `.to(comm_dtype())` casts the gradients to whatever dtype the node
was launched with, and a node launched differently all-reduces another dtype. (A function
annotated `-> str` names a device: quiet/padded_on_the_device_the_host_names.py.)"""
import os

import torch
import torch.distributed as dist


COMM_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def comm_dtype() -> torch.dtype:
    return COMM_DTYPES[os.environ.get("GRAD_COMM_DTYPE", "fp32")]


def reduce_gradients(model):
    for p in model.parameters():
        g = p.grad.to(comm_dtype())
        dist.all_reduce(g)
        p.grad.copy_(g)
