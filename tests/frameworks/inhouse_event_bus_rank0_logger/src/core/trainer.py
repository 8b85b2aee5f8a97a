"""The training loop: emits `step_end` after every optimizer step."""

import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, bus, cfg, rank):
        self.model, self.optimizer, self.bus = model, optimizer, bus
        self.cfg, self.rank = cfg, rank

    def fit(self):
        g = torch.Generator().manual_seed(self.rank + 100)
        features = self.cfg["model"]["features"]
        for step in range(1, self.cfg["train"]["steps"] + 1):
            x = torch.randn(self.cfg["train"]["batch_size"], features, generator=g)
            y = x.sum(dim=1, keepdim=True)
            loss = F.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.bus.emit("step_end", step=step, loss=loss.item(), samples=len(x))
