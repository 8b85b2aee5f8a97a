"""An async engine loop: rank 0 decides the next action, a broadcast run in a worker thread
(`asyncio.to_thread`, so the event loop keeps serving requests) hands the decision to every
rank, and every rank acts on the agreed decision."""
import asyncio

import torch
import torch.distributed as dist


class Engine:
    def __init__(self, group):
        self.rank = dist.get_rank()
        self.group = group
        self.queue = []

    async def decide(self):
        return "close" if not self.queue else "step"

    async def loop(self):
        while True:
            decision = await self.decide() if self.rank == 0 else None
            box = [decision] if self.rank == 0 else [None]
            await asyncio.to_thread(dist.broadcast_object_list, box, src=0, group=self.group)
            decision = box[0]
            if decision == "close":
                return
            step = torch.ones(1)
            await asyncio.to_thread(dist.all_reduce, step, group=self.group)
