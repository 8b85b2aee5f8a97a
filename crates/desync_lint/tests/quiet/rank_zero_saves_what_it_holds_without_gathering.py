"""The checkpoint writer gathers the full state dict first unless told the model is already
whole on this rank (`gather=False`). Under DDP every rank holds the whole model, and rank 0
calls the writer with `gather=False`: the literal decides the writer's `if gather:` for this
call, so rank 0 writes what it holds and issues nothing the others would have to match.
(The same call with `gather=True` under the rank test gathers on rank 0 alone and fires.)"""
import os

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict


def write_checkpoint(model, path, step, gather=True):
    if gather:
        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    else:
        state = model.state_dict()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save({"model": state, "step": step}, path)


class Trainer:
    def __init__(self, model, out_dir, save_every):
        self.model = model
        self.out_dir = out_dir
        self.save_every = save_every

    def maybe_save(self, step):
        if step % self.save_every != 0:
            return
        if dist.get_rank() == 0:
            path = os.path.join(self.out_dir, f"step-{step}.pt")
            write_checkpoint(self.model.module, path, step, gather=False)
        dist.barrier()
