"""A runner that builds its model wrapper from a config: the keyword arguments are gathered in
a dict first, and the local rank goes in as `device_ids`, as it would in `DDP(model,
device_ids=[local_rank])`. Where the model lives says nothing about which parameters it has:
unwrapping it and broadcasting every entry of its state dict is the same loop on every rank."""
import os

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

WRAPPERS = {"ddp": DistributedDataParallel}


def wrap(model, wrapper_cfg):
    kwargs = dict(wrapper_cfg.get("kwargs", {}))
    if wrapper_cfg["type"] == "ddp":
        kwargs["device_ids"] = [int(os.environ["LOCAL_RANK"])]
    return WRAPPERS[wrapper_cfg["type"]](model, **kwargs)


class Runner:
    def __init__(self, model, cfg):
        self.model = wrap(model, cfg["wrapper"])

    def sync_initial_weights(self):
        model = self.model.module if isinstance(self.model, DistributedDataParallel) else self.model
        for _, tensor in model.state_dict().items():
            dist.broadcast(tensor, src=0)
