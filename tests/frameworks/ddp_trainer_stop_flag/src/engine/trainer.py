"""The training loop: DDP over the sensor windows, callbacks after every step."""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


class Trainer:
    def __init__(self, cfg, loader, callbacks=()):
        self.cfg = cfg
        self.rank = dist.get_rank()
        self.loader = loader
        self.callbacks = list(callbacks)
        self.model = DistributedDataParallel(
            nn.Sequential(nn.Linear(cfg.window, 32), nn.GELU(), nn.Linear(32, 1)))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg.lr)
        self.global_step = 0
        self.last_loss = float("inf")
        self.stop_requested = False

    def training_step(self, batch):
        x, y = batch
        loss = nn.functional.mse_loss(self.model(x).squeeze(-1), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self):
        batches = iter(self.loader)
        while not self.stop_requested and self.global_step < self.cfg.max_steps:
            self.last_loss = self.training_step(next(batches))
            self.global_step += 1
            for callback in self.callbacks:
                callback.on_step_end(self)
        return self.summarize()

    def summarize(self):
        stats = torch.tensor([self.last_loss, float(self.global_step), 1.0])
        dist.all_reduce(stats)
        return {"mean_loss": stats[0].item() / stats[2].item(), "steps": int(stats[1].item())}
