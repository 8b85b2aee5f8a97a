# expect: DSY001 at line 7
"""`rank_zero_only` imported from `lightning_fabric.utilities.rank_zero`: body on rank 0 only."""
import torch.distributed as dist
from lightning_fabric.utilities.rank_zero import rank_zero_only


@rank_zero_only
def save(model, path):
    dist.barrier()
    model.save(path)
