"""Speculative-decoding draft model (block diffusion) trained under DDP with gradient
accumulation.

A micro-batch whose samples are all too short to form a block raises NoValidAnchorsError;
the loop catches it per rank and moves on. That rank skips `backward()` (and the gradient
all_reduce DDP issues on the last micro-batch), and its accumulation window shifts against
its peers'.
"""
import contextlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class NoValidAnchorsError(ValueError):
    """Every sample in the micro-batch is shorter than one block."""


def block_loss(model, batch, block_size):
    lengths = batch["attention_mask"].sum(dim=1)
    anchors = (lengths >= block_size).nonzero().flatten()
    if anchors.numel() == 0:
        raise NoValidAnchorsError(f"no sample reaches {block_size} tokens")
    logits = model(batch["input_ids"][anchors], batch["attention_mask"][anchors])
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"][anchors].flatten())


def train(model: DDP, loader, optimizer, scheduler, cfg):
    step = 0
    for micro, batch in enumerate(loader):
        last_micro = (micro + 1) % cfg.grad_accum == 0
        sync = contextlib.nullcontext() if last_micro else model.no_sync()
        with sync:
            try:
                loss = block_loss(model, batch, cfg.block_size) / cfg.grad_accum
            except NoValidAnchorsError:
                continue  # BUG: only this rank skips the micro-batch (and its backward)
            loss.backward()
        if last_micro:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if dist.get_rank() == 0 and step % cfg.log_every == 0:
                print(f"step {step} loss {loss.item() * cfg.grad_accum:.4f}")
