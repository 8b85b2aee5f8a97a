# expect: DSY002 at line 31
"""The attribute is agreed, then a method of the same object runs before the test, and that
method sets it again from the rank's own clock: the value at the test is no longer the
broadcast one."""
import time

import torch.distributed as dist


class Runner:
    def __init__(self, rank, budget_s):
        self.rank = rank
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.halt = False

    def after_step(self):
        self.halt = time.monotonic() - self.started > self.budget_s

    def fit(self, model, optimizer, steps):
        for step in range(steps):
            model(step).backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            optimizer.step()
            flag = [self.halt]
            dist.broadcast_object_list(flag, src=0)
            self.halt = flag[0]
            self.after_step()
            if self.halt:
                break
