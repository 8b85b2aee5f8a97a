"""Process-group setup and small helpers."""

import os
from datetime import timedelta

import torch.distributed as dist


def init(timeout_s: int):
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
    return dist.get_rank(), dist.get_world_size()


def is_main() -> bool:
    return dist.get_rank() == 0


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", 0))
