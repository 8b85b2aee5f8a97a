# expect: DSY002 at line 45
"""Only a group of one rank makes the shortcut harmless. Here the helper hands rank 0 its own
batch back whenever the loader has one worker, a setting of the data pipeline, not of the
group: in a job of four ranks rank 0 never scatters, decides `data is None` on its own
batches, and the others wait in a scatter it never issues.
(The single-rank shortcut is quiet: quiet/batches_scattered_with_a_single_rank_shortcut.py.)"""
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
        if self.loader.num_workers == 1 and inputs is not None:
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
