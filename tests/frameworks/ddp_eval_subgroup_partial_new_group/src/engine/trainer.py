"""The epoch loop: DDP steps, holdout scoring on the evaluating ranks, a run summary."""

import torch.distributed as dist
import torch.nn.functional as F

from comm.groups import object_group
from engine.evaluate import holdout_accuracy


class Trainer:
    def __init__(self, model, optimizer, loader, cfg, rank: int):
        self.model, self.optimizer, self.loader = model, optimizer, loader
        self.cfg, self.rank = cfg, rank

    def run(self) -> None:
        for epoch in range(self.cfg.epochs):
            last = self.train_epoch()
            summary = {"rank": self.rank, "epoch": epoch, "loss": last}
            if self.rank < self.cfg.eval_ranks:
                summary["holdout_acc"] = holdout_accuracy(self.model.module, self.cfg, self.rank)
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, summary, group=object_group())
            if self.rank == 0:
                print(f"epoch {epoch}: {gathered}", flush=True)

    def train_epoch(self) -> float:
        for x, y in self.loader:
            loss = F.binary_cross_entropy_with_logits(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        print(f"rank {self.rank}: trained epoch", flush=True)
        return loss.item()
