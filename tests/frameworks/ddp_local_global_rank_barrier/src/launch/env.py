"""Where this process sits in the job, as torchrun describes it."""

import os
from dataclasses import dataclass
from datetime import timedelta

import torch.distributed as dist


@dataclass(frozen=True)
class DistEnv:
    rank: int
    world: int
    local_rank: int
    node: int

    @property
    def is_node_leader(self) -> bool:
        return self.local_rank == 0


def init(timeout_s: float) -> DistEnv:
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=timeout_s))
    return DistEnv(rank=dist.get_rank(), world=dist.get_world_size(),
                   local_rank=int(os.environ.get("LOCAL_RANK", "0")),
                   node=int(os.environ.get("GROUP_RANK", "0")))
