"""Streams (history, next category) pairs from this process's part of the export."""

import torch
import torch.distributed as dist
from torch.utils.data import IterableDataset

from data.manifest import part_rows


class ClickstreamPart(IterableDataset):
    def __init__(self, export_dir: str, categories: int, history: int, seed: int):
        self.export_dir = export_dir
        self.categories, self.history, self.seed = categories, history, seed

    def _part(self) -> int:
        return dist.get_rank() if dist.is_initialized() else 0

    def __iter__(self):
        part = self._part()
        g = torch.Generator().manual_seed(self.seed * 1000 + part)
        for _ in range(part_rows(self.export_dir, part)):
            start = torch.randint(0, self.categories, (1,), generator=g)
            step = torch.randint(1, 3, (1,), generator=g)
            seq = (start + step * torch.arange(self.history + 1)) % self.categories
            yield seq[:-1], seq[-1]
