# expect: DSY001 at line 42
"""The wrapper of `quiet/broadcast_helper_whose_source_mirrors_its_receivers.py`, but the
receivers of `share` listen to the group's first member whatever `src` is: for another source
they take rank 0's object (or wait on a broadcast it never sends), so the layout the receivers
test is not shown to be the source's."""
import math

import torch
import torch.distributed as dist


class Relay:
    def __init__(self, group, ranks):
        self.group = group
        self.ranks = ranks
        self.rank = dist.get_rank(group)

    def share(self, obj=None, src=0):
        if self.rank == src:
            dist.broadcast_object_list([obj], src=self.ranks[src], group=self.group)
            return obj
        received = [None]
        dist.broadcast_object_list(received, src=self.ranks[0], group=self.group)
        return received[0]

    def send_arrays(self, arrays, src=0):
        layout = [(name, tuple(a.shape)) for name, a in arrays.items()]
        self.share(layout, src=src)
        for name, shape in layout:
            if math.prod(shape) == 0:
                continue
            dist.broadcast(arrays[name], src=self.ranks[src], group=self.group)
        return arrays

    def receive_arrays(self, src=0):
        layout = self.share(None, src=src)
        out = {}
        for name, shape in layout:
            t = torch.empty(shape)
            out[name] = t
            if t.numel() == 0:
                continue
            dist.broadcast(t, src=self.ranks[src], group=self.group)
        return out


def publish_buffers(model, group, ranks):
    relay = Relay(group, ranks)
    return relay.send_arrays(dict(model.named_buffers()))
