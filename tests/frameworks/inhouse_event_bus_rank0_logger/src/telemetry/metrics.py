"""Run metrics: counters accumulated per step and reduced across ranks at every flush."""

import torch
import torch.distributed as dist


class MetricsWriter:
    def __init__(self, flush_every: int):
        self.flush_every = flush_every
        self.sums = torch.zeros(3)

    def on_step_end(self, step: int, loss: float, samples: int):
        self.sums += torch.tensor([loss, float(samples), 1.0])
        if step % self.flush_every == 0:
            self.flush(step)

    def flush(self, step: int):
        totals = self.sums.clone()
        dist.all_reduce(totals)
        print(f"step {step}: mean loss {totals[0] / totals[2]:.4f} over {int(totals[1])} samples",
              flush=True)
        self.sums.zero_()
