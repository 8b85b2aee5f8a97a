# expect: DSY001 at line 12
# expect: DSY001 at line 14
"""Collectives under any import alias."""
import os

import torch
import torch.distributed as d
from torch.distributed import all_reduce as reduce_all, broadcast


def sync(x):
    if d.get_rank() == 0:
        reduce_all(x)
    if int(os.environ["LOCAL_RANK"]) == 0:
        broadcast(x, src=0)
    torch.distributed.barrier()
