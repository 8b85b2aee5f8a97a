"""Resumable checkpoints, stamped with the number of tokens the run has consumed."""

import os

import torch
import torch.distributed as dist


def save_checkpoint(model, opt, step: int, tokens_seen: int, ckpt_dir: str):
    total = torch.tensor(tokens_seen, dtype=torch.int64)
    dist.all_reduce(total)  # tokens over all ranks, for the resume bookkeeping
    if dist.get_rank() == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                    "step": step, "tokens": int(total)}, os.path.join(ckpt_dir, f"step{step}.pt"))
    return int(total)
