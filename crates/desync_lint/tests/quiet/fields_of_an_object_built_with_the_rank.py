"""An object is built with the rank among its arguments, but the fields the loop reads are
the epoch count and the epoch to resume from, which its class sets from other arguments and
from what a method is handed: the rank reaches only its own field."""
import torch.distributed as dist


class Schedule:
    def __init__(self, rank, world_size, epochs, warmup=2):
        self.rank = rank
        self.world_size = world_size
        self.total = epochs + warmup
        self.first = 0

    def resume(self, saved):
        self.first = saved["epoch"]


def train(model, epochs, saved):
    schedule = Schedule(dist.get_rank(), dist.get_world_size(), epochs)
    schedule.resume(saved)
    for epoch in range(schedule.first, schedule.total):
        loss = model(epoch)
        dist.all_reduce(loss)
