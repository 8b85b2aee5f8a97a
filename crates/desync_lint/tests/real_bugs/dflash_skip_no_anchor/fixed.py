"""Speculative-decoding draft model (block diffusion) trained under DDP with gradient
accumulation.

Whether a micro-batch has a valid anchor is decided per rank, then agreed on with a MIN
all_reduce: if any rank has none, every rank skips that micro-batch together.
"""
import contextlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def has_valid_anchor(batch, block_size):
    lengths = batch["attention_mask"].sum(dim=1)
    return bool((lengths >= block_size).any())


def all_ranks_have_valid(flag, device):
    if not dist.is_initialized():
        return flag
    t = torch.tensor([1 if flag else 0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def block_loss(model, batch, block_size):
    lengths = batch["attention_mask"].sum(dim=1)
    anchors = (lengths >= block_size).nonzero().flatten()
    logits = model(batch["input_ids"][anchors], batch["attention_mask"][anchors])
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"][anchors].flatten())


def train(model: DDP, loader, optimizer, scheduler, cfg):
    step = 0
    for micro, batch in enumerate(loader):
        last_micro = (micro + 1) % cfg.grad_accum == 0
        if not all_ranks_have_valid(has_valid_anchor(batch, cfg.block_size), batch["input_ids"].device):
            continue
        sync = contextlib.nullcontext() if last_micro else model.no_sync()
        with sync:
            loss = block_loss(model, batch, cfg.block_size) / cfg.grad_accum
            loss.backward()
        if last_micro:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if dist.get_rank() == 0 and step % cfg.log_every == 0:
                print(f"step {step} loss {loss.item() * cfg.grad_accum:.4f}")
