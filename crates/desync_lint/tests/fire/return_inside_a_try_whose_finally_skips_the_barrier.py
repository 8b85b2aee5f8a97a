# expect: DSY001 at line 11
"""The same early return, but the barrier follows the `try` (its `finally` only logs): the
returning ranks never reach it."""
import torch
import torch.distributed as dist


def export(model, path):
    try:
        if dist.get_rank() != 0:
            return
        torch.save(model.state_dict(), path)
    finally:
        print("export done")
    dist.barrier()
