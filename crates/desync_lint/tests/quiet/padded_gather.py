"""Variable-length gathers made safe: sizes are exchanged and tensors padded to the max."""
import torch
import torch.distributed as dist
import torch.nn.functional as F


def gather_predictions(preds, world_size):
    local_size = torch.tensor([preds.shape[0]])
    sizes = [torch.zeros_like(local_size) for _ in range(world_size)]
    dist.all_gather(sizes, local_size)
    max_size = max(int(s.item()) for s in sizes)
    padded = F.pad(preds, (0, 0, 0, max_size - preds.shape[0]))
    out = [torch.empty_like(padded) for _ in range(world_size)]
    dist.all_gather(out, padded)
    return torch.cat([o[: int(s.item())] for o, s in zip(out, sizes)])


def gather_fixed(model, val_x, world_size):
    with torch.no_grad():
        preds = model(val_x)
    gathered = [torch.empty_like(preds) for _ in range(world_size)]
    dist.all_gather(gathered, preds)
    counts = torch.tensor([len(val_x)])
    dist.all_gather(gathered, counts)
    return gathered


def gather_with_helper_padding(x, world_size):
    y = pad_to_multiple(x, 8)
    out = torch.empty(world_size * y.shape[0], *y.shape[1:])
    dist.all_gather_into_tensor(out, y)
    return out


def gather_flat_shards(tensors, shard_numel, world_size, out):
    parts = []
    for t in tensors:
        parts.append(t.reshape(-1))
    pad_numel = shard_numel - sum(p.numel() for p in parts)
    if pad_numel > 0:
        parts.append(torch.zeros(pad_numel))
    flat = torch.cat(parts)
    dist.all_gather_into_tensor(out, flat)
