"""A process-group wrapper sends a dict of tensors from one member: the source shares the
layout (name and shape of each tensor) with `share`, then broadcasts each non-empty tensor;
the others receive the layout through their own `share`, build empty tensors of those shapes
and receive the same non-empty ones, in the same order. `share` runs the same
`broadcast_object_list` from the same source on both sides (the source sends `[obj]` and
returns `obj`, the others return what they received), so the layout, and every test on it,
is the same on every member: the receivers' skip of an empty tensor mirrors the source's.
(`publish_buffers` is a caller in view of the source side.)"""
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
        dist.broadcast_object_list(received, src=self.ranks[src], group=self.group)
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
