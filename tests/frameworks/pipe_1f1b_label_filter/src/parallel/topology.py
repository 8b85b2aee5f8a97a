"""Process layout: rank = stage * dp_size + replica.

Pipeline groups join the stages of one replica ({0, 2}, {1, 3}); data-parallel groups join
the replicas of one stage ({0, 1}, {2, 3}). Every rank creates every group, in the same order.
"""

from dataclasses import dataclass

import torch.distributed as dist


@dataclass
class Topology:
    rank: int
    stage: int
    num_stages: int
    replica: int
    dp_size: int
    pp_group: dist.ProcessGroup
    dp_group: dist.ProcessGroup

    @property
    def is_last_stage(self) -> bool:
        return self.stage == self.num_stages - 1


def build_topology(num_stages: int) -> Topology:
    rank, world = dist.get_rank(), dist.get_world_size()
    dp_size = world // num_stages
    stage, replica = divmod(rank, dp_size)
    pp_group = dp_group = None
    for r in range(dp_size):
        group = dist.new_group([s * dp_size + r for s in range(num_stages)])
        if r == replica:
            pp_group = group
    for s in range(num_stages):
        group = dist.new_group([s * dp_size + r for r in range(dp_size)])
        if s == stage:
            dp_group = group
    return Topology(rank, stage, num_stages, replica, dp_size, pp_group, dp_group)
