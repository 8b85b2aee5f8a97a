"""The job's layout: global rank, host, and the host's first rank."""

import os
from dataclasses import dataclass
from datetime import timedelta

import torch.distributed as dist


@dataclass(frozen=True)
class Topology:
    rank: int
    world: int
    local_rank: int
    local_world: int

    @property
    def node_leader(self) -> int:
        """Global rank of the first process on this host."""
        return self.rank - self.local_rank


def setup(timeout_s: float) -> Topology:
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=timeout_s))
    return Topology(rank=dist.get_rank(), world=dist.get_world_size(),
                    local_rank=int(os.environ["LOCAL_RANK"]),
                    local_world=int(os.environ["LOCAL_WORLD_SIZE"]))
