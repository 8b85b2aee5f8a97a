# expect: DSY001 at line 11
# expect: DSY001 at line 17
"""A membership test does not excuse a collective on the default group (every rank is a
member of it), nor a members' clause that issues something the leader does not."""
import torch
import torch.distributed as dist


def warm_up(ranks):
    warm = torch.zeros(1)
    if dist.get_rank() in ranks:
        dist.all_reduce(warm)


def relay(self, tensor):
    rank = dist.get_rank()
    if rank == self.leader:
        dist.broadcast(tensor, src=rank, group=self.relay_group)
        return tensor
    elif rank in self.relay_ranks:
        dist.broadcast(tensor, src=self.leader, group=self.relay_group)
        dist.all_reduce(tensor, group=self.relay_group)
        return tensor
    return None
