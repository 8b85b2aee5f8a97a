# expect: DSY001 at line 17
"""Not a distributed-or-not test: `RANK == 0` picks one rank, so only the leader enters the
broadcast and the others never do. (`RANK >= 0` asked through a helper is quiet:
quiet/launched_distributed_asked_through_a_helper.py.)"""
import os

import torch.distributed as dist


def is_leader():
    rank = int(os.getenv("RANK", -1))
    return rank == 0


def share_folder(work_dir):
    sub_folder = os.path.join(work_dir, "run")
    if is_leader():
        box = [sub_folder]
        dist.broadcast_object_list(box)
        sub_folder = box[0]
    return sub_folder
