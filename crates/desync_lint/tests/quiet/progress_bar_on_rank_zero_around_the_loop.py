"""Only the first rank shows a progress bar: it rebinds the list it walks to a tqdm wrapper of
that same list. A progress bar yields its iterable's items, in their order (its other
arguments only change the display), so every rank walks the same shapes in the same order and
issues the same all_reduce for each."""
import torch
import torch.distributed as dist
from tqdm.auto import tqdm


class GraphCapture:
    def __init__(self, shapes, show_progress):
        self.shapes = shapes
        self.show_progress = show_progress

    def warm_up(self, device):
        shapes = list(self.shapes)
        if dist.get_rank() == 0:
            shapes = tqdm(shapes, disable=not self.show_progress, desc="warming up")
        for rows, cols in shapes:
            probe = torch.zeros(rows, cols, device=device)
            dist.all_reduce(probe)
