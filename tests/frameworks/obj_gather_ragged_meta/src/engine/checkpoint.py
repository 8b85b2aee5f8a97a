"""Best-checkpoint tracking: rank 0 decides, everyone learns the decision."""

import torch
import torch.distributed as dist


class BestKeeper:
    def __init__(self, path: str):
        self.path = path
        self.best = float("inf")

    def update(self, model, logloss: float, epoch: int) -> bool:
        decision = [None]
        if dist.get_rank() == 0:
            decision[0] = {"improved": logloss < self.best, "epoch": epoch, "logloss": logloss}
        dist.broadcast_object_list(decision, src=0)
        improved = decision[0]["improved"]
        if improved:
            self.best = decision[0]["logloss"]
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), self.path)
        return improved
