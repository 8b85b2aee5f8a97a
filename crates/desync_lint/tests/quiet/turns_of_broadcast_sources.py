"""Sharded optimizer state consolidated on one rank by turns: in iteration `src` the rank
`src` broadcasts its shard, the target receives it and every other rank takes part as a
bystander. In the iteration where the target would send to itself nobody issues anything;
in every other iteration every rank issues the broadcast."""
import torch
import torch.distributed as dist


def send_object(obj, src, group):
    holder = [obj]
    dist.broadcast_object_list(holder, src=src, group=group)
    return holder[0]


class ShardedState:
    def __init__(self, shard, group):
        self.shard = shard
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.gathered = []

    def consolidate(self, to=0):
        self.gathered = []
        for src in range(self.world_size):
            if self.rank == to:
                if src == self.rank:
                    self.gathered.append(self.shard)
                else:
                    self.gathered.append(send_object(None, src, self.group))
            else:
                if src == self.rank:
                    send_object(self.shard, src, self.group)
                elif src != to:
                    send_object(None, src, self.group)
        return self.gathered if self.rank == to else None
