# expect: DSY004 at line 16
"""The first rank wraps a progress bar around a copy of the list sorted by size: the bar keeps
the order of what it wraps, but what it wraps is reordered, so rank 0 issues the all_reduces
in another order than its peers."""
import torch
import torch.distributed as dist
from tqdm.auto import tqdm


class GraphCapture:
    def __init__(self, shapes):
        self.shapes = shapes

    def warm_up(self, device):
        shapes = list(self.shapes)
        if dist.get_rank() == 0:
            shapes = tqdm(sorted(shapes, key=lambda s: s[0] * s[1]), desc="warming up")
        for rows, cols in shapes:
            probe = torch.zeros(rows, cols, device=device)
            dist.all_reduce(probe)
