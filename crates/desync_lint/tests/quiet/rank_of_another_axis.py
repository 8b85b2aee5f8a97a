"""A checkpoint writer on a data x pipeline grid: only data-parallel rank 0 of each pipeline
stage writes, and the writers meet in a barrier of their pipeline group. Every member of a
pipeline group shares its data-parallel coordinate, so the test on the data-parallel rank
sends the whole pipeline group the same way; the data-parallel group's own collectives run
on every rank."""
import torch
import torch.distributed as dist


class ShardedCheckpointer:
    def __init__(self, dp_group, pp_group):
        self.dp_group = dp_group
        self.pp_group = pp_group
        self.dp_rank = dist.get_rank(self.dp_group)
        self.pp_rank = dist.get_rank(group=self.pp_group)

    def save(self, state, path):
        step = torch.tensor([state["step"]])
        dist.all_reduce(step, op=dist.ReduceOp.MAX, group=self.dp_group)
        if self.dp_rank != 0:
            return
        torch.save(state, f"{path}/stage{self.pp_rank}.pt")
        dist.barrier(self.pp_group)

    def announce(self, payload):
        if self.dp_rank == 0:
            dist.broadcast(payload, src=0, group=self.pp_group)
