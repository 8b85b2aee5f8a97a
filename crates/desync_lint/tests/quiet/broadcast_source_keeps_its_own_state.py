"""Rank 0 loaded the optimizer state; the other ranks receive it with broadcast_object_list.
The helper returns rank 0's own dict on rank 0 and the received copy on the others, so every
rank walks the same keys. The second helper sends a copy whose tensors are replaced by their
shapes (`tree_map_only`): the dicts still have the same keys and the same empty entries on
every rank, so skipping an empty entry or a missing key skips alike everywhere. (Testing the
type of a leaf of that copy differs by rank: fire/broadcast_copy_leaf_type_decides.py.)"""
import copy

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map_only


def share_state(state, group=None):
    box = [copy.deepcopy(state) if dist.get_rank(group) == 0 else None]
    dist.broadcast_object_list(box, src=0, group=group)
    if dist.get_rank(group) == 0:
        return state
    return box[0]


def share_shapes(state, group=None):
    objects: list = [None]
    if dist.get_rank(group) == 0:
        objects[0] = tree_map_only(torch.Tensor, lambda t: tuple(t.shape), state)
    dist.broadcast_object_list(objects, src=0, group=group)
    if dist.get_rank(group) == 0:
        return state
    else:
        return objects[0]


def load_scalars(optim_state, names, group=None):
    state = share_state(optim_state, group)
    for name in names:
        if state[name]["step"] > 0:
            step = torch.tensor(float(state[name]["step"]))
            dist.all_reduce(step, group=group)


def load_tensors(optim_state, names, device, group=None):
    shapes = share_shapes(optim_state, group)
    for name in names:
        if name not in shapes:
            continue
        if not shapes[name]:
            continue
        for key in shapes[name]:
            buffer = torch.empty(1, device=device)
            dist.broadcast(buffer, src=0, group=group)


def restore(model, optim_state, device, group=None):
    names = [name for name, _ in model.named_parameters()]
    load_scalars(optim_state, names, group)
    load_tensors(optim_state, names, device, group)
