# expect: DSY001 at line 13
"""A barrier run in a worker thread is still a barrier: issued on rank 0 only, the others
never reach it."""
import asyncio

import torch.distributed as dist


async def save(state, path):
    import torch

    rank = dist.get_rank()
    if rank == 0:
        torch.save(state, path)
        await asyncio.to_thread(dist.barrier)
