# expect: DSY002 at line 14
"""A progress bar changes nothing about what it iterates: here each rank walks its own strided
slice of the evaluation files, whose length differs when the files do not divide evenly, and
the ranks with fewer leave the loop while the others wait in the all-reduce.
(A bar over the same range everywhere is quiet: quiet/progress_bar_shown_on_the_main_rank_only.py.)"""
import torch
import torch.distributed as dist
from tqdm.auto import tqdm


def evaluate(model, files):
    rank, world = dist.get_rank(), dist.get_world_size()
    total = torch.zeros(1)
    for path in tqdm(files[rank::world], position=rank):
        total += model.score(path)
        dist.all_reduce(total)
    return total
