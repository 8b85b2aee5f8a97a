# expect: DSY002 at line 30
"""The same helper shape, but the size helper returns the local device count on its fallback
path, which can be more than one: that return is no world of one, so the shortcut is not a
single-process path and each rank's own value comes back unshared."""
import torch
import torch.distributed as dist


def world_size() -> int:
    if not dist.is_initialized():
        return torch.cuda.device_count()
    return dist.get_world_size()


def from_leader(value):
    if world_size() == 1:
        return value
    box = [value] if dist.get_rank() == 0 else [None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def fit(model, loader, stopper):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        if from_leader(stopper.should_stop(loss.item())):
            break
