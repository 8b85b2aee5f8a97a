"""Process group and DDP wrapping, with the host's gradient-communication settings."""

from datetime import timedelta

import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel


def init(timeout_s: float) -> int:
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
    return dist.get_rank()


def wrap_model(model, host):
    ddp = DistributedDataParallel(model, bucket_cap_mb=host.bucket_cap_mb)
    if host.grad_compression == "fp16":
        # Halve the gradient traffic on bandwidth-constrained hosts.
        ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    return ddp
