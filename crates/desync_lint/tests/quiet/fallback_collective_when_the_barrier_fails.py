"""A strategy's barrier: some CPU builds of torch fail `barrier()` itself with a known error;
the strategy then synchronises with an all_reduce instead, and re-raises anything else. The
`try` holds only the barrier, so no earlier statement can raise and skip it, and the handler
issues a collective in its place. (Swallowing a collective's failure without a replacement
still fires: fire/swallowed_errors.py.)"""
import torch
import torch.distributed as dist


class CpuStrategy:
    def __init__(self, device):
        self.device = device

    def barrier(self):
        if not dist.is_initialized():
            return
        try:
            dist.barrier()
        except RuntimeError as e:
            if "PrivateUse1HooksInterface" in str(e):
                dist.all_reduce(torch.tensor(0.0, device=self.device))
            else:
                raise
