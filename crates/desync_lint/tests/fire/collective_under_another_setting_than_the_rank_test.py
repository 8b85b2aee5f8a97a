# expect: DSY001 at line 16
"""The same evaluator, but the all_reduce sits under another setting than the one that widens
the rank test: with `spread_eval` off and `sum_totals` on, only the main rank reduces."""
import torch
import torch.distributed as dist


class Evaluator:
    def __init__(self, cfg):
        self.spread_eval = cfg.spread_eval
        self.sum_totals = cfg.sum_totals

    def run(self, model, loader):
        is_main = dist.get_rank() == 0
        takes_part = is_main or self.spread_eval
        if takes_part:
            total = 0.0
            for batch in loader:
                total += float(model(batch))
            if self.sum_totals:
                summed = torch.tensor([total])
                dist.all_reduce(summed)
                total = summed.item()
            return total
        return None
