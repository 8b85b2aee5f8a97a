"""Rank 0 decides whether a checkpoint exists and a helper broadcasts its answer. The helper
returns its argument unchanged when the job is not distributed at all, which the project asks
through its own predicates (one returns `dist.is_available() and dist.is_initialized()`, the
other is the `if not ...: return False` / `return True` form many training repos copy): a
single process has no peers, so on every rank of a distributed job the decision is rank 0's."""
import os

import torch.distributed as dist


def is_distributed():
    """Whether this process is one rank of a distributed job."""
    return dist.is_available() and dist.is_initialized()


def is_dist_avail_and_initialized():
    if not dist.is_available():
        return False
    if not dist.is_initialized():
        return False
    return True


def broadcast_object(obj, src=0):
    if not is_distributed():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def broadcast_flag(flag):
    if not is_dist_avail_and_initialized():
        return flag
    box = [flag]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def maybe_resume(trainer, folder):
    should_load = True
    if dist.get_rank() == 0:
        should_load = os.path.exists(os.path.join(folder, "latest"))
    should_load = broadcast_object(should_load)
    if should_load:
        trainer.load_checkpoint(folder)
        dist.all_reduce(trainer.step_tensor)


def maybe_stop(trainer):
    stop = broadcast_flag(dist.get_rank() == 0 and trainer.done)
    if stop:
        dist.all_reduce(trainer.step_tensor)
