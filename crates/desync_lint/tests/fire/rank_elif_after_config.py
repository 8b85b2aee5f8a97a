# expect: DSY001 at line 13
"""A rank test in an `elif` still chooses between its own clause and the ones after it: here
rank 0 takes a barrier its peers (which fall to the `else`) never reach."""
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def save_checkpoint(state, args):
    if args.sharded_checkpoint:
        dcp.save(state, checkpoint_id=args.checkpoint_dir)
        return
    elif dist.get_rank() == 0:
        torch.save(state, f"{args.checkpoint_dir}/full.pt")
        dist.barrier()
    else:
        print("waiting for rank 0")
