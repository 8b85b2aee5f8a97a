# expect: DSY001 at line 9
"""`rank_zero_only` imported from `pytorch_lightning.utilities` (the package re-exports it
there): the decorated function runs on global rank 0 only, so its barrier is one the other
ranks never meet."""
import torch.distributed as dist
from pytorch_lightning.utilities import rank_zero_only


@rank_zero_only
def save(model, path):
    dist.barrier()
    model.save(path)
