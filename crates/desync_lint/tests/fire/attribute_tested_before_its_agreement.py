# expect: DSY002 at line 22
"""The attribute is tested before the broadcast that would agree on it: at the test it holds
each rank's own clock reading, so a rank past its budget leaves the loop while its peers wait
in the broadcast."""
import time

import torch.distributed as dist


class Runner:
    def __init__(self, budget_s):
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.halt = False

    def fit(self, model, optimizer, steps):
        for step in range(steps):
            model(step).backward()
            optimizer.step()
            self.halt = time.monotonic() - self.started > self.budget_s
            if self.halt:
                break
            flag = [self.halt]
            dist.broadcast_object_list(flag, src=0)
            self.halt = flag[0]
