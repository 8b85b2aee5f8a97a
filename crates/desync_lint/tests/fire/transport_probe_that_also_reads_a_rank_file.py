# expect: DSY003 at line 22
"""The same transport, but the `try` also reads a topology file named after the rank: a rank
whose file is missing leaves before the handle exchange its peers enter."""
import importlib
import logging

import torch.distributed as dist

logger = logging.getLogger(__name__)


class FastReduce:
    def __init__(self, group, package):
        self.group = group
        self.disabled = True
        try:
            ext = importlib.import_module(package)
            with open(f"/dev/shm/topology_{dist.get_rank()}.txt") as f:
                topology = f.read()
        except Exception as err:
            logger.info("fast reduce unavailable: %s", err)
            return
        handles = [None] * dist.get_world_size(group)
        dist.all_gather_object(handles, ext.local_handle(topology), group=group)
        self.handles = handles
        self.disabled = False
