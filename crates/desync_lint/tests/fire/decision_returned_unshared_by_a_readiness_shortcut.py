# expect: DSY001 at line 29
"""A shortcut that is not about the job being distributed: `ready()` also asks whether this
rank's marker file exists, so on a rank that lacks it the helper hands back its
own value unshared: rank 0's answer on rank 0, the default on the others, so the decision
differs across ranks. (A shortcut taken only when the job is not distributed is quiet:
quiet/decision_broadcast_by_a_helper_with_a_single_process_shortcut.py.)"""
import os

import torch.distributed as dist


def ready():
    return dist.is_initialized() and os.path.exists("/tmp/ready")


def broadcast_object(obj, src=0):
    if not ready():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def maybe_resume(trainer, folder):
    should_load = False
    if dist.get_rank() == 0:
        should_load = os.path.exists(os.path.join(folder, "latest"))
    should_load = broadcast_object(should_load)
    if should_load:
        trainer.load_checkpoint(folder)
        dist.all_reduce(trainer.step_tensor)
