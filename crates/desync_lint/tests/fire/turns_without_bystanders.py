# expect: DSY001 at line 27
# expect: DSY001 at line 28
"""Consolidation by turns that forgets the bystanders: with three or more ranks, in the
iteration of source 1 only rank 1 and the target issue the broadcast; rank 2 goes on to its
own turn and broadcasts as source 2 while the others wait in source 1's broadcast."""
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
            elif src == self.rank:
                send_object(self.shard, src, self.group)
        return self.gathered if self.rank == to else None
