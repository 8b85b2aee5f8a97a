"""A library version read through the installed packages' metadata, with a fallback when the
package is not installed: every rank of a job runs the same installation, so the handler runs
on all ranks or on none, and the flag it decides is the same everywhere."""
from importlib import metadata

import torch
import torch.distributed as dist


def has_version(package, minimum):
    try:
        found = metadata.version(package)
    except metadata.PackageNotFoundError:
        return False
    return tuple(int(x) for x in found.split(".")[:2]) >= minimum


NEW_TORCH = has_version("torch", (2, 1))


def reduce_in_half(t):
    if NEW_TORCH:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            dist.all_reduce(t)
    else:
        dist.all_reduce(t)
