"""The agreement written only for distributed runs: `if LOCAL_RANK != -1` broadcasts rank 0's
flag into the attribute; a run without a launcher (LOCAL_RANK == -1) keeps its own clock's
answer, and has no peers to disagree with. In a distributed run every rank tests the broadcast
value."""
import os
import time

import torch.distributed as dist

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", -1))


class Loop:
    def __init__(self, hours):
        self.hours = hours
        self.t0 = time.time()
        self.over = False

    def epochs(self, model, loader, n):
        for epoch in range(n):
            for batch in loader:
                model(batch).backward()
            self.over = (time.time() - self.t0) > self.hours * 3600
            if LOCAL_RANK != -1:
                holder = [self.over if LOCAL_RANK == 0 else None]
                dist.broadcast_object_list(holder, 0)
                self.over = holder[0]
            if self.over:
                break
