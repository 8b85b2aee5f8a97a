# expect: DSY003 at line 14
"""The same guarded vote, but the `try` first loads a file of the rank's own: a rank whose
load fails skips the all_reduce its peers issue."""
import torch
import torch.distributed as dist


def agree_all(path, device):
    try:
        state = torch.load(path)
        vote = torch.tensor([int(state["ok"])], device=device)
        dist.all_reduce(vote, op=dist.ReduceOp.MIN)
        return bool(vote.item())
    except RuntimeError:
        return False
