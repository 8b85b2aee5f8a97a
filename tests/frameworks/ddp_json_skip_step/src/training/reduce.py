import torch
import torch.distributed as dist


def global_mean(value: torch.Tensor) -> torch.Tensor:
    """Mean of a scalar over all ranks (Gloo has no AVG: sum, then divide)."""
    total = value.detach().clone().reshape(1)
    dist.all_reduce(total)
    return total / dist.get_world_size()
