"""Staged barriers around a sharded save: the ranks that do not save wait in one barrier, the
savers in one at the end. Without pipeline stages the parent's save (called only then) issues
nothing; its pipeline branch gathers the stages' states, but that branch is not taken from
here: both methods test the same field of the same object."""
import torch
import torch.distributed as dist


class ShardedCheckpointIO:
    def __init__(self, dp_group, pp_group):
        self.dp_group = dp_group
        self.pp_group = pp_group
        self.dp_rank = dist.get_rank(dp_group)
        self.pp_size = dist.get_world_size(pp_group)

    def save_model(self, model, path):
        state = model.state_dict()
        if self.pp_size == 1:
            if self.dp_rank == 0:
                torch.save(state, path)
        else:
            stages = [None] * self.pp_size
            dist.all_gather_object(stages, state)
            merged = {}
            for part in stages:
                merged.update(part)
            torch.save(merged, path)


class ExpertCheckpointIO(ShardedCheckpointIO):
    def save_model(self, model, path):
        if dist.get_rank() != 0:
            dist.barrier()
            return
        if self.pp_size == 1:
            super().save_model(model, path)
        else:
            torch.save(model.state_dict(), f"{path}.stage")
        dist.barrier()
