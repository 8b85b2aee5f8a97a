# expect: DSY001 at line 25
"""The receivers' side of an entry-by-entry send lost its early exit: the source returns early
for small entries and skips the broadcast, while every receiver goes on to issue it and
waits. (With an exit on both sides, each role deciding from its own view of the protocol:
quiet/role_exits_decided_per_role.py.)"""
import torch
import torch.distributed as dist


class ShapeInfo:
    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype


def describe(state):
    if isinstance(state, torch.Tensor) and state.dim() > 0:
        return ShapeInfo(state.shape, state.dtype)
    return state


def send_entry(state, group, device):
    if dist.get_rank(group) == 0:
        if not isinstance(state, torch.Tensor) or state.dim() == 0:
            return state
        tensor = state.to(device)
    else:
        tensor = torch.zeros(state.shape, dtype=state.dtype, device=device)
    dist.broadcast(tensor, src=0, group=group)
    return tensor


def share_state(optim_state, group, device):
    """The source's real state, or on the receivers what the source described of it."""
    objects = [None]
    if dist.get_rank(group) == 0:
        objects[0] = {key: describe(value) for key, value in optim_state.items()}
    dist.broadcast_object_list(objects, src=0, group=group)
    if dist.get_rank(group) == 0:
        return optim_state
    return objects[0]


def load_state(optim_state, group, device):
    received = share_state(optim_state, group, device)
    for key in received:
        received[key] = send_entry(received[key], group, device)
    return received
