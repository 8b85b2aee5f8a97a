"""Pretraining loop: steps, periodic loss logging, token-based checkpoints."""

import torch
import torch.distributed as dist

from trainer.checkpoint import save_checkpoint
from trainer.step import train_step


def pretrain(model, opt, data, cfg, rank: int):
    tokens_seen = 0
    next_ckpt_at = cfg.ckpt_every_tokens
    window = torch.zeros(2)
    for step in range(1, cfg.steps + 1):
        inputs, targets = next(data)
        loss_sum, local_tokens, global_tokens = train_step(model, opt, inputs, targets)
        tokens_seen += local_tokens
        window += torch.stack([loss_sum, torch.tensor(float(global_tokens))])
        if step % cfg.log_every == 0:
            dist.all_reduce(window)
            if rank == 0:
                print(f"step {step}: loss/token {window[0].item() / window[1].item() * dist.get_world_size():.4f}",
                      flush=True)
            window.zero_()
        if tokens_seen >= next_ckpt_at:
            print(f"rank {rank}: {tokens_seen} tokens at step {step}, checkpointing", flush=True)
            save_checkpoint(model, opt, step, tokens_seen, cfg.ckpt_dir)
            next_ckpt_at += cfg.ckpt_every_tokens
    return tokens_seen
