"""Loss reporting. Tensor-parallel ranks hold the same loss; data-parallel ranks do not."""

import torch
import torch.distributed as dist


def report_loss(loss: torch.Tensor, dp_group, dp_size: int, step: int) -> None:
    if dist.get_rank() == 0:
        mean = loss.detach().clone()
        dist.all_reduce(mean, group=dp_group)
        print(f"step {step}: data-parallel mean loss {mean.item() / dp_size:.4f}", flush=True)
