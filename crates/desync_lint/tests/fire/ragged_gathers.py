# expect: DSY005 at line 13
# expect: DSY005 at line 23
"""Gathers whose tensors take their shape from local data."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def gather_lengths(batch, world_size):
    n = len(batch)
    buf = torch.zeros(n, 4)
    out = [torch.empty_like(buf) for _ in range(world_size)]
    dist.all_gather(out, buf)
    return out


def gather_predictions(model, val_x, out):
    rank, world = dist.get_rank(), dist.get_world_size()
    preds = []
    for x in val_x[rank::world]:
        preds.append(model(x))
    local = torch.cat(preds)
    dist.all_gather_into_tensor(out, local)


def main(dataset, world_size):
    for batch in DataLoader(dataset, batch_size=32):
        valid = batch[batch[:, 0] >= 0]
        gather_lengths(valid, world_size)
