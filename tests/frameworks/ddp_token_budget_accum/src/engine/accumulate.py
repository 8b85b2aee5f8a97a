"""Gradient accumulation by token budget: one optimizer update per `tokens_per_update` tokens.

Micro-batches before the budget is reached run under DDP's no_sync() (gradients pile up
locally); the micro-batch that reaches it runs normally, so its backward all-reduces the
accumulated gradients, and the optimizer steps.
"""

from contextlib import nullcontext

import torch

from engine.loss import token_mean_loss
from engine.report import log_epoch, log_micro_step


def train_epoch(model, optimizer, loader, cfg, rank: int, epoch: int) -> int:
    model.train()
    tokens_since_update, updates, last = 0, 0, float("nan")
    for micro, (tokens, mask) in enumerate(loader, start=1):
        tokens_since_update += int(mask[:, 1:].sum())
        log_micro_step(rank, epoch, micro, tokens_since_update, cfg.tokens_per_update)
        sync_now = tokens_since_update >= cfg.tokens_per_update
        with nullcontext() if sync_now else model.no_sync():
            logits = model(tokens[:, :-1])
            loss = token_mean_loss(logits, tokens[:, 1:], mask[:, 1:])
            loss.backward()
        if sync_now:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            updates, tokens_since_update, last = updates + 1, 0, loss.item()
    log_epoch(rank, epoch, updates, last)
    return updates
