"""Converting a pipeline-parallel checkpoint: each layer's tensor lives on one pipeline stage.
The owner shares its shape first, the others allocate an empty tensor of that shape, and a
broadcast called with keyword arguments (`tensor=...`) fills it: afterwards every stage holds
the same tensor, so testing it and gathering it across the tensor-parallel group is the same
on every rank."""
import torch
import torch.distributed as dist


def from_owning_stage(tensor, pp_group):
    spec = (tensor.shape, tensor.dtype) if tensor is not None else None
    specs = [None] * dist.get_world_size(pp_group)
    dist.all_gather_object(object_list=specs, obj=spec, group=pp_group)
    owner = next(i for i, s in enumerate(specs) if s is not None)
    if tensor is None:
        shape, dtype = specs[owner]
        tensor = torch.empty(shape, dtype=dtype)
    dist.broadcast(tensor=tensor, src=dist.get_global_rank(pp_group, owner), group=pp_group)
    return tensor


def is_sharded(param):
    return getattr(param, "tensor_model_parallel", False)


def export_layers(layers, owners, pp_group, tp_group, tp_size):
    stage = dist.get_rank()
    out = {}
    for name, owner in owners.items():
        local = layers[name] if owner == stage else None
        full = from_owning_stage(local, pp_group)
        if is_sharded(full):
            parts = [torch.empty_like(full) for _ in range(tp_size)]
            dist.all_gather(parts, full, group=tp_group)
            full = torch.cat(parts)
        out[name] = full
    return out
