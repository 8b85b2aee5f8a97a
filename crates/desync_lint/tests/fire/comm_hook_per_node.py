# expect: DSY006 at line 19
"""A gradient-compression hook registered on the nodes whose launcher config asks for it: those
ranks all-reduce fp16 buckets while the others send fp32 ones."""
import os

import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


def wants_compression(rank):
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "8"))
    return rank // per_node == 1


def wrap(model):
    rank = dist.get_rank()
    ddp = DDP(model)
    if wants_compression(rank):
        ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    return ddp
