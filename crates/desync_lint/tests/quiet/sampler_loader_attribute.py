"""A step counter over a loader that the recipe builds in a setup method and keeps on `self`:
its `DistributedSampler` (torchdata's stateful one too) gives every rank the same number of
batches, so stopping at `max_steps` happens on the same iteration everywhere."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
from torchdata.stateful_dataloader import StatefulDataLoader
from torchdata.stateful_dataloader.sampler import StatefulDistributedSampler


class Recipe:
    def setup(self, cfg, dataset):
        self.max_steps = cfg.max_steps
        self.accum = cfg.gradient_accumulation_steps
        self._loader = self._setup_data(dataset, cfg.batch_size)
        sampler = DistributedSampler(dataset, shuffle=True)
        self._eval_loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler)

    def _setup_data(self, dataset, batch_size):
        sampler = StatefulDistributedSampler(dataset, shuffle=True)
        loader = StatefulDataLoader(dataset=dataset, batch_size=batch_size, sampler=sampler)
        return loader

    def train(self, model):
        for idx, batch in enumerate(self._loader):
            if (idx + 1) // self.accum == self.max_steps:
                break
            loss = model(batch)
            dist.all_reduce(loss)

    def evaluate(self, model):
        for idx, batch in enumerate(self._eval_loader):
            if idx == self.max_steps:
                break
            dist.all_reduce(model(batch))
