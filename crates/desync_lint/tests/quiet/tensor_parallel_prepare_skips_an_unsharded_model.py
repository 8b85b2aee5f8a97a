"""A prepare step in the style of a trainer's tensor-parallel setup: it walks the objects it is
given, and when the model holds no DTensor parameter it was not sharded, which every rank did
alike (the same model code and plan), so every rank returns before the state-dict exchange."""
import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor


def prepare_tensor_parallel(*objects):
    prepared = [obj for obj in objects]
    for obj in objects:
        if not isinstance(obj, torch.nn.Module):
            continue
        if not any(isinstance(p, DTensor) for p in obj.parameters()):
            return prepared
    names = [None] * dist.get_world_size()
    dist.all_gather_object(names, [n for o in objects for n, _ in getattr(o, "named_parameters", list)()])
    return prepared
