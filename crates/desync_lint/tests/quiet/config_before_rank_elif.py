"""Checkpointing: a sharded save (a collective) when the configuration asks for it, else a
full save written by rank 0 alone. Whether the first clause runs is configuration, the same
on every rank; the rank only chooses between the later clauses, and neither issues a
collective."""
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def save_checkpoint(state, args):
    if args.sharded_checkpoint:
        dcp.save(state, checkpoint_id=args.checkpoint_dir)
    elif dist.get_rank() == 0:
        torch.save(state, f"{args.checkpoint_dir}/full.pt")
