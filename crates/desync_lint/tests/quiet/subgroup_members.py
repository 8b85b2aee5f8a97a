"""Collectives of a sub-group issued by its members only: the test asks whether this rank is
in the group's ranks, and the ranks outside it have nothing to issue on that group. A leader
and the members of a broadcast group issue the same broadcasts with different roots; a
`return` in the leader's clause does not skip the members' clause."""
import torch
import torch.distributed as dist


def create_process_group(ranks):
    group = dist.new_group(ranks=ranks)
    warm = torch.zeros(1)
    if dist.get_rank() in ranks:
        dist.all_reduce(warm, group=group)
    return group


def relay(self, tensor):
    rank = dist.get_rank()
    if rank == self.leader:
        shape = torch.tensor(tensor.shape)
        dist.broadcast(shape, src=rank, group=self.relay_group)
        dist.broadcast(tensor, src=rank, group=self.relay_group)
        return tensor
    elif self.is_member and rank in self.relay_ranks:
        shape = torch.empty(3, dtype=torch.int64)
        dist.broadcast(shape, src=self.leader, group=self.relay_group)
        received = torch.empty(tuple(shape.tolist()))
        dist.broadcast(received, src=self.leader, group=self.relay_group)
        return received
    return None


def probe(ranks, group):
    rank = dist.get_rank()
    free = torch.tensor([1.0])
    if rank not in ranks:
        free = None
    else:
        dist.all_reduce(free, op=dist.ReduceOp.MIN, group=group)
    return free
