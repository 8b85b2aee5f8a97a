# expect: DSY003 at line 13
# expect: DSY003 at line 23
"""Handlers that swallow errors around and before collectives."""
import torch.distributed as dist


def sync(x, shard):
    # The rank's own read can fail before the collective (a try around the collective alone
    # is quiet: a collective's failure is its group's, quiet/try_around_only_the_collective.py).
    try:
        x += shard.read()
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
