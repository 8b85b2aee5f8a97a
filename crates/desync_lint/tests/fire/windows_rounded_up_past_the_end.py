# expect: DSY005 at line 19
"""Windows of one width are one size only when they fit: here the width is rounded up so that
every item has a window, and the last rank's window runs past the end. With 10 items on 4
ranks the windows hold 3, 3, 3 and 1 items, and the gather of unequal tensors fails or hangs.
(Windows that fit are quiet: quiet/equal_windows_of_a_shared_tensor.py.)"""
import math

import torch
import torch.distributed as dist


def gather_scores(scores):
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    per_rank = math.ceil(scores.size(0) / world_size)
    mine = scores[rank * per_rank : (rank + 1) * per_rank]
    local = mine.float().softmax(0)
    parts = [torch.empty_like(local) for _ in range(world_size)]
    dist.all_gather(parts, local)
    return torch.cat(parts)
