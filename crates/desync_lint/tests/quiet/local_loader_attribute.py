"""A loader the recipe keeps on `self`, built over the files of a folder: if each host staged
its own files there, a rank with fewer files stops counting first and leaves the loop while its
peers wait in the next reduction. The decision rests on the host alone (a folder's listing),
which a shared file system gives alike to every rank far more often than not: the finding (on
the `for`, whose number of passes the host decides; the `break` tests the pass number) is
indirect evidence, shown with `--include-indirect` (tests/corpus.rs)."""
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
