# expect: DSY006 at line 12
"""The communication dtype comes from each node's environment."""
import os

import torch
import torch.distributed as dist


def reduce_grads(model):
    dtype = torch.bfloat16 if os.environ.get("USE_BF16") == "1" else torch.float32
    flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    dist.all_reduce(flat.to(dtype))
