"""A run folder name every rank must share: rank 0's is broadcast when the job was launched
distributed, which a helper answers from the launcher's variables (`RANK >= 0 and LOCAL_RANK
>= 0`: launchers number ranks from 0, so this says whether the job is distributed at all,
the same on every rank, as the same test in an `if` does)."""
import datetime
import os

import torch.distributed as dist


def dist_setting():
    rank = int(os.getenv("RANK", -1))
    local_rank = int(os.getenv("LOCAL_RANK", -1))
    return rank, local_rank


def is_dist():
    rank, local_rank = dist_setting()
    return rank >= 0 and local_rank >= 0


def versioned_folder(work_dir):
    sub_folder = datetime.datetime.now().strftime("v-%Y%m%d-%H%M%S")
    if dist.is_initialized() and is_dist():
        box = [sub_folder]
        dist.broadcast_object_list(box)
        sub_folder = box[0]
    return os.path.join(work_dir, sub_folder)
