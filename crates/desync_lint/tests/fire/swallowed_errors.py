# expect: DSY003 at line 10
# expect: DSY003 at line 20
"""Handlers that swallow errors around and before collectives."""
import torch.distributed as dist


def sync(x):
    try:
        dist.all_reduce(x)
    except RuntimeError:
        pass
    return x


def train(model, loader):
    for batch in loader:
        try:
            loss = model(batch)
        except ValueError:
            continue
        dist.all_reduce(loss)
