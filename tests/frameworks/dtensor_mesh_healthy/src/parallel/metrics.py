"""Loss reporting. Tensor-parallel ranks hold the same loss; data-parallel ranks do not."""

import torch
import torch.distributed as dist


def report_loss(loss: torch.Tensor, mesh, step: int) -> None:
    # One rank per tensor-parallel group reports: those ranks form a whole data-parallel
    # group, so every member of that group joins the all_reduce.
    if mesh["tp"].get_local_rank() == 0:
        mean = loss.detach().clone()
        dist.all_reduce(mean, group=mesh["dp"].get_group())
        if dist.get_rank() == 0:
            print(f"step {step}: data-parallel mean loss {mean.item() / mesh['dp'].size():.4f}",
                  flush=True)
