# expect: DSY005 at line 14
"""The same buffer gathered over the data-parallel group: replica 0 sends 64 values, the
others 16."""
import torch
import torch.distributed as dist


def gather_history(history, dp_group, tp_group):
    dp_rank = dist.get_rank(dp_group)
    keep = 64 if dp_rank == 0 else 16
    window = torch.zeros(keep)
    window[: len(history[-keep:])] = torch.tensor(history[-keep:])
    out = [torch.zeros_like(window) for _ in range(dist.get_world_size(tp_group))]
    dist.all_gather(out, window, group=dp_group)
    return out
