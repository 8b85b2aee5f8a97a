"""A worker thread takes each rank's finished transfers from a queue and agrees on them with
its peers. The poll waits at most a second (`get(timeout=1)`), so it raises `queue.Empty`
while nothing has come; the handler goes back to the top of the loop and polls again. The
`Empty` can only come from that first statement, before the all_reduce: a rank whose item is
late reaches the same all_reduce once the item comes (deferred, not skipped), and no item is
dropped."""
import queue
import threading

import torch
import torch.distributed as dist


class TransferSync:
    def __init__(self, group):
        self.group = group
        self.pending = queue.Queue()
        self.done = queue.Queue()
        self.stop = threading.Event()

    def agree(self, item):
        count = torch.tensor([item], dtype=torch.int64)
        dist.all_reduce(count, op=dist.ReduceOp.MIN, group=self.group)
        return int(count.item())

    def run(self):
        while not self.stop.is_set():
            try:
                item = self.pending.get(timeout=1)
                agreed = self.agree(item)
                self.done.put(agreed)
            except queue.Empty:
                continue
