# expect: DSY002 at line 22
"""A loader the recipe keeps on `self`, built over the files this host has: its length differs
across ranks, so a rank with fewer files stops counting first and leaves the loop while its
peers wait in the next reduction."""
import os

import torch.distributed as dist
from torch.utils.data import DataLoader


class Recipe:
    def setup(self, cfg):
        self.max_steps = cfg.max_steps
        self._loader = self._setup_data(cfg.data_dir)

    def _setup_data(self, data_dir):
        return DataLoader(sorted(os.listdir(data_dir)), batch_size=4)

    def train(self, model):
        for idx, batch in enumerate(self._loader):
            if idx == self.max_steps:
                break
            dist.all_reduce(model(batch))
