"""A helper broadcasts rank 0's value and returns what was received; its other return is the
shortcut of a world of one, asked through the project's own size helper (1 when not
distributed). Every rank of a distributed run gets rank 0's stop flag."""
import torch.distributed as dist


def world_size() -> int:
    if not dist.is_available():
        return 1
    if not dist.is_initialized():
        return 1
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
