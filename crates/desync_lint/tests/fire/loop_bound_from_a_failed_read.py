# expect: DSY002 at line 24
"""Training for as many batches as a per-node index file says, or until the data runs out
when the file cannot be read: the read fails on some nodes only (a missing local copy), so
those ranks loop on while the others stop, and the gradients' all_reduce goes unmatched.
(With `except (TypeError, NotImplementedError)` around `len(loader)` the same loop is only
indirect evidence: quiet/loop_bound_from_a_loader_without_len.py.)"""
import torch.distributed as dist


def batches_in(loader):
    try:
        length = int(open(loader.index_file).read())
    except OSError:
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
