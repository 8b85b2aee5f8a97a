"""Node-aware process groups from the launcher's environment (torchrun sets these).

Every rank creates every group, in the same order: one group per node, then the group of
node leaders (local rank 0 of each node).
"""

import os
from dataclasses import dataclass

import torch.distributed as dist


@dataclass
class NodeTopology:
    rank: int
    node: int
    local_rank: int
    node_group: dist.ProcessGroup
    leader_group: dist.ProcessGroup | None
    leader: int  # global rank of this node's leader

    @property
    def is_leader(self) -> bool:
        return self.local_rank == 0


def build() -> NodeTopology:
    rank, world = dist.get_rank(), dist.get_world_size()
    per_node = int(os.environ["LOCAL_WORLD_SIZE"])
    node, local_rank = int(os.environ["GROUP_RANK"]), int(os.environ["LOCAL_RANK"])
    node_group = None
    for n in range(world // per_node):
        group = dist.new_group(list(range(n * per_node, (n + 1) * per_node)))
        if n == node:
            node_group = group
    leaders = dist.new_group(list(range(0, world, per_node)))
    return NodeTopology(rank, node, local_rank, node_group,
                        leaders if local_rank == 0 else None, node * per_node)
