"""A synthetic stream seeded by the rank: each rank draws different batches, but the stream
says itself how many it yields (`steps`, the same everywhere), so every rank runs the
gradient all_reduce as often as its peers. The rank it is given seeds it; it does not size it."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset


class SeededStream(IterableDataset):
    def __init__(self, seed, steps, batch=32, features=16):
        self.seed, self.steps = seed, steps
        self.batch, self.features = batch, features

    def __iter__(self):
        g = torch.Generator().manual_seed(1234 + self.seed)
        for _ in range(self.steps):
            x = torch.randn(self.batch, self.features, generator=g)
            yield x, x.sum(dim=1, keepdim=True)


def train(model, optimizer, steps):
    rank = dist.get_rank()
    world = dist.get_world_size()
    loader = DataLoader(SeededStream(rank, steps), batch_size=None)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
