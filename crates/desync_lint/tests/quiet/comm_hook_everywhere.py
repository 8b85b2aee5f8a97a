"""The compression hook is chosen from the command line (the same on every rank), or registered
on both sides of a rank test."""
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP


def wrap(model, args):
    rank = dist.get_rank()
    ddp = DDP(model)
    if args.fp16_grads:
        ddp.register_comm_hook(state=None, hook=default_hooks.fp16_compress_hook)
    if rank % 2 == 0:
        ddp.register_comm_hook(state=None, hook=default_hooks.bf16_compress_hook)
    else:
        ddp.register_comm_hook(state=None, hook=default_hooks.bf16_compress_hook)
    return ddp
