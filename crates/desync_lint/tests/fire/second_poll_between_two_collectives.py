# expect: DSY003 at line 33
"""The worker of `quiet/poll_that_retries_until_its_item_comes.py`, but the `try` polls a
second queue (the peer's acknowledgement) between two all_reduces: an `Empty` from that poll
comes after the first all_reduce, and the `continue` takes the rank to the next item and its
all_reduce while its peers wait in the second one."""
import queue
import threading

import torch
import torch.distributed as dist


class TransferSync:
    def __init__(self, group):
        self.group = group
        self.pending = queue.Queue()
        self.done = queue.Queue()
        self.acks = queue.Queue()
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
                ack = self.acks.get(timeout=1)
                self.done.put(self.agree(min(agreed, ack)))
            except queue.Empty:
                continue
