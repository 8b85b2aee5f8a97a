# expect: DSY001 at line 33
"""A metrics reporter keeps the function it gathers with on `self` (a plain function when the
job is distributed, nothing otherwise) and calls it only on rank 0 when it writes the report:
the gather inside runs on rank 0 alone, and rank 0 waits in it for peers that never come."""
import json

import torch.distributed as dist


def gather_to_all(obj):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


class Reporter:
    def __init__(self, path):
        self.path = path
        self.values = {}
        self.gather_fn = gather_to_all if dist.is_initialized() else None

    def add(self, name, value):
        self.values[name] = float(value)

    def merged(self):
        if self.gather_fn is None:
            return [self.values]
        return self.gather_fn(self.values)

    def write(self, step):
        if dist.is_initialized() and dist.get_rank() != 0:
            self.values.clear()
            return
        if self.gather_fn is not None:
            parts = self.gather_fn(self.values)
        else:
            parts = [self.values]
        with open(self.path, "a") as f:
            f.write(json.dumps({"step": step, "parts": parts}) + "\n")
        self.values.clear()
