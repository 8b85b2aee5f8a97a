# expect: DSY001 at line 33
"""The job reads its launcher's variables through one helper that takes the variable's name
(and falls back to a default when it is unset). Only local rank 0 of each node downloads the
checkpoint, but resolving a tracking URI broadcasts the resolved path from global rank 0:
the other local ranks return early and never join it."""
import os

import torch.distributed as dist


def config_var(env_var, default):
    if env_var in os.environ:
        return int(os.environ[env_var])
    return default


def get_local_rank():
    return config_var(env_var="LOCAL_RANK", default=0)


def resolve_uri(uri):
    box = [uri]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def download(uri, destination):
    local_rank = get_local_rank()
    world = config_var("WORLD_SIZE", 1)
    if world == 1:
        return None
    if local_rank != 0:
        return None
    path = resolve_uri(uri)
    with open(destination, "w") as f:
        f.write(path)
    return destination
