"""Rank 0 reads the loader and scatters one batch to each rank; when its loader runs out it
scatters `None` to all of them and every rank stops on the same step. The scatter helper
hands the input back when the group has one rank: a job of one process has no peer to
disagree with, so that shortcut says nothing about what the ranks of a real job receive."""
import torch.distributed as dist


class RankZeroDispatcher:
    def __init__(self, loader):
        self.loader = loader

    @property
    def group(self):
        return dist.group.WORLD if dist.is_initialized() else None

    @property
    def world_size(self):
        return dist.get_world_size(self.group) if dist.is_initialized() else 1

    @property
    def rank(self):
        return dist.get_rank(self.group) if dist.is_initialized() else 0

    def _scatter(self, inputs):
        if self.world_size == 1:
            return inputs[0]
        outputs = [None]
        dist.scatter_object_list(outputs, inputs, src=0, group=self.group)
        return outputs[0]

    def __iter__(self):
        batches = iter(self.loader)
        while True:
            if self.rank == 0:
                try:
                    data = [next(batches) for _ in range(self.world_size)]
                except StopIteration:
                    data = [None] * self.world_size
                data = self._scatter(data)
            else:
                data = self._scatter(None)
            if data is None:
                break
            yield data
