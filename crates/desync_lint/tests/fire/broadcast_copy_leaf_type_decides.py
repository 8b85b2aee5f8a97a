# expect: DSY001 at line 39
# expect: DSY001 at line 48
"""Rank 0 keeps its optimizer state, the others receive a copy in which every tensor of more
than one element was replaced by its shape (`tree_map_only`). The dicts agree in keys, but a
leaf is a tensor on rank 0 and a tuple on the others: only rank 0 enters the branch that
broadcasts the tensor, and its peers never join (torch FSDP's user-defined optimizer state
shape). The second helper returns something other than what it sent on the source rank, so
nothing agrees there. (The keys and empty entries of such a copy agree:
quiet/broadcast_source_keeps_its_own_state.py.)"""
import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map_only


def share_shapes(state, group=None):
    objects = [None]
    if dist.get_rank(group) == 0:
        objects[0] = tree_map_only(torch.Tensor, lambda t: t if t.numel() == 1 else tuple(t.shape), state)
    dist.broadcast_object_list(objects, src=0, group=group)
    if dist.get_rank(group) == 0:
        return state
    return objects[0]


def share_or_default(state, default, group=None):
    objects = [None]
    if dist.get_rank(group) == 0:
        objects[0] = state
    dist.broadcast_object_list(objects, src=0, group=group)
    if dist.get_rank(group) == 0:
        return default
    return objects[0]


def load_user_state(optim_state, keys, group=None):
    shapes = share_shapes(optim_state, group)
    for key in keys:
        leaf = shapes[key]
        if isinstance(leaf, torch.Tensor):
            dist.broadcast(leaf, src=0, group=group)


def load_steps(optim_state, defaults, group=None):
    state = share_or_default(optim_state, defaults, group)
    step = torch.tensor(0.0)
    if state["step"] > 0:
        step += 1
    if state["warmup"]:
        dist.all_reduce(step, group=group)
