"""Pipeline-parallel logging buffer: the first data-parallel replica keeps a longer history.
The buffer is gathered over the tensor-parallel group, whose members share their
data-parallel coordinate (grid layout), so every member of one gather has the same length."""
import torch
import torch.distributed as dist


def gather_history(history, dp_group, tp_group):
    dp_rank = dist.get_rank(dp_group)
    keep = 64 if dp_rank == 0 else 16
    window = torch.zeros(keep)
    window[: len(history[-keep:])] = torch.tensor(history[-keep:])
    out = [torch.zeros_like(window) for _ in range(dist.get_world_size(tp_group))]
    dist.all_gather(out, window, group=tp_group)
    return out
