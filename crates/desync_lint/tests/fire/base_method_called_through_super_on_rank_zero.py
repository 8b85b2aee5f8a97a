# expect: DSY001 at line 28
"""A subclass overrides the checkpoint save and calls the base class's save through `super()`
on rank 0 only; the base's save gathers every rank's state first, so the others never join
that gather."""
import torch
import torch.distributed as dist


class CheckpointIO:
    def __init__(self, world_size):
        self.world_size = world_size

    def save(self, model, path):
        states = [None] * self.world_size
        dist.all_gather_object(states, model.state_dict())
        merged = {}
        for state in states:
            merged.update(state)
        torch.save(merged, path)


class AsyncCheckpointIO(CheckpointIO):
    def __init__(self, world_size):
        super().__init__(world_size)
        self.pending = []

    def save(self, model, path):
        if dist.get_rank() == 0:
            super().save(model, path)
        dist.barrier()
