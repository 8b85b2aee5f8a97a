# expect: DSY001 at line 22
"""A helper two calls deep issues the collective; the call site is under a rank check."""
import torch
import torch.distributed as dist
from accelerate import Accelerator


def _mean_over_ranks(t):
    dist.all_reduce(t)
    return t / dist.get_world_size()


class Logger:
    def log_metrics(self, metrics):
        return {k: _mean_over_ranks(torch.tensor(v)) for k, v in metrics.items()}


def train(model, loader, accelerator: Accelerator, logger: Logger):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        if accelerator.is_main_process:
            logger.log_metrics({"loss": loss.item()})
