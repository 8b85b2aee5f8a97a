# expect: DSY005 at line 17
# expect: DSY005 at line 18
"""A number computed from the rank is a size when a tensor is made with it: each rank's buffer
holds `base + rank` elements, so the gather gets a different size from every rank. (A tensor
shifted by such a number keeps its own size, here the buffer's own ragged one:
quiet/token_ids_shifted_by_the_ranks_vocab_offset.py.)"""
import torch
import torch.distributed as dist


def share_buffers(base):
    rank = dist.get_rank()
    world = dist.get_world_size()
    size = base + rank
    buffer = torch.zeros(size)
    parts = [torch.empty(base) for _ in range(world)]
    dist.all_gather(parts, buffer)
    dist.all_gather(parts, buffer + rank)
