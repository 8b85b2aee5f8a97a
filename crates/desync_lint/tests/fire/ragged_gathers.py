# expect: DSY005 at line 12
# expect: DSY005 at line 21
"""Gathers whose tensors take their shape from local data."""
import torch
import torch.distributed as dist


def gather_lengths(batch, world_size):
    n = len(batch)
    buf = torch.zeros(n, 4)
    out = [torch.empty_like(buf) for _ in range(world_size)]
    dist.all_gather(out, buf)
    return out


def gather_predictions(model, loader, out):
    preds = []
    for x in loader:
        preds.append(model(x))
    local = torch.cat(preds)
    dist.all_gather_into_tensor(out, local)
