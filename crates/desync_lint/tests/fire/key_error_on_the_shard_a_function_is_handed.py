# expect: DSY003 at line 24
"""Loading a sharded checkpoint: the shard each rank was handed (`shard`, which no call in
view passes) can lack a parameter another rank's shard has. The lookup raises KeyError on that
rank only, and `continue` skips the all_gather its peers issue for that parameter. (Shaped like
FSDP's sharded state-dict load, which logs the missing name and skips it.)"""
import logging

import torch
import torch.distributed as dist

logger = logging.getLogger(__name__)


def _flat_names(module):
    return [name for name, _ in module.named_parameters()]


def load_sharded(module, shard, world_size):
    for name in _flat_names(module):
        try:
            local = shard.pop(name)
        except KeyError:
            logger.warning("no %s in this shard, skipping it", name)
            continue
        full = torch.empty(local.numel() * world_size, dtype=local.dtype)
        dist.all_gather_into_tensor(full, local)
        module.get_parameter(name).data.copy_(full.view_as(module.get_parameter(name)))
