# expect: DSY001 at line 17
"""Rank 0 writes the checkpoint inside its own block and leaves early when it should not
overwrite one; the barrier every rank meets sits after the block. Whatever decides the inner
`return` (a setting every rank shares here), only rank 0 can take it: when it does, the others
wait at the barrier for a rank that has returned. The inner test alone depends on nothing;
the block around it is what splits the ranks."""
import torch
import torch.distributed as dist


def save_checkpoint(model, path, overwrite):
    rank = dist.get_rank()
    if rank == 0:
        print(f"saving to {path}")
        if not overwrite:
            print("keeping the old checkpoint")
            return
        torch.save(model.state_dict(), path)
    dist.barrier()
