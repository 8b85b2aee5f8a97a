"""Sending an optimizer's state entry by entry: the source sends small entries (scalars, step
counters) with the metadata it broadcast first and returns early for them; the receivers
rebuild each entry from that metadata and return early for exactly the entries that came
whole. Each role decides from its own side of one protocol whether the tensor broadcast
follows, and both roles have that exit, so they skip it together; the metadata they decide
on is the same entries seen from both ends."""
import torch
import torch.distributed as dist


class ShapeInfo:
    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype


def describe(state):
    """What receivers get for each entry: small values whole, large tensors as their shape."""
    if isinstance(state, torch.Tensor) and state.dim() > 0:
        return ShapeInfo(state.shape, state.dtype)
    return state


def send_entry(state, group, device):
    if dist.get_rank(group) == 0:
        if not isinstance(state, torch.Tensor) or state.dim() == 0:
            return state
        tensor = state.to(device)
    else:
        if isinstance(state, torch.Tensor):
            return state
        elif not isinstance(state, ShapeInfo):
            return state
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
