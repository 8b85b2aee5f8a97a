# expect: DSY002 at line 14
"""Each rank keeps the tensors whose position modulo the world size is its rank, then walks the
whole state dict and skips the keys it does not keep, before a broadcast every rank must join:
the ranks that keep a key broadcast it, the others have moved on to the next key."""
import torch.distributed as dist


def distribute(full_state_dict):
    rank = dist.get_rank()
    world = dist.get_world_size()
    kept = {k: v for i, (k, v) in enumerate(full_state_dict.items()) if i % world == rank}
    for key, value in full_state_dict.items():
        if key not in kept:
            continue
        dist.broadcast(value, src=0)
