"""Evaluation runs on the main rank, or on every rank when the shared setting says so; the
all_reduce sits under that very setting. Where the setting holds, the outer test is true on
every rank, so every rank issues the all_reduce; where it does not, no rank issues it."""
import torch
import torch.distributed as dist


class Evaluator:
    def __init__(self, cfg):
        self.spread_eval = cfg.spread_eval

    def run(self, model, loader):
        is_main = dist.get_rank() == 0
        takes_part = is_main or self.spread_eval
        if takes_part:
            total = 0.0
            for batch in loader:
                total += float(model(batch))
            if self.spread_eval:
                summed = torch.tensor([total])
                dist.all_reduce(summed)
                total = summed.item()
            return total
        return None
