"""Training for as many batches as the loader has, or until the data runs out when it cannot
tell: `len()` of an iterable-style loader raises `TypeError` on every rank alike (every rank
builds the same kind of loader), so the fallback is not a decision some ranks make alone. A
handler that catches only exceptions signalling the program's structure is indirect
evidence (shown with --include-indirect); the same loop after `except OSError` fires
(fire/loop_bound_from_a_failed_read.py)."""
import torch.distributed as dist


def batches_in(loader):
    try:
        length = len(loader)
    except (TypeError, NotImplementedError):
        length = None
    return length


def train(model, loader, optimizer):
    total = batches_in(loader)
    limit = total if total is not None else float("inf")
    step = 0
    for batch in loader:
        if step >= limit:
            break
        loss = model(batch)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        step += 1
