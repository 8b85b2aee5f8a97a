# expect: DSY001 at line 19
# expect: DSY001 at line 21
# expect: DSY001 at line 26
"""Tests on the rank within a group split that group, and the world: the data-parallel
rank-0 ranks alone reach the data-parallel barrier (positional group) and the world barrier,
and the world rank 0 alone reaches the pipeline group's broadcast."""
import torch.distributed as dist


class Writer:
    def __init__(self, dp_group, pp_group):
        self.dp_group = dp_group
        self.pp_group = pp_group
        self.dp_rank = dist.get_rank(self.dp_group)

    def save(self, state, path):
        with open(path, "w") as f:
            f.write(str(state))
        if self.dp_rank == 0:
            dist.barrier(self.dp_group)
        if self.dp_rank == 0:
            dist.barrier()

    def announce(self, payload):
        rank = dist.get_rank()
        if rank == 0:
            dist.broadcast(payload, src=0, group=self.pp_group)
