"""Variable-length per-rank results gathered the safe way: every rank all_gathers its length
first, pads its tensor up to the longest, gathers, then trims each piece back."""
import torch
import torch.distributed as dist


def gather_ragged(values, group=None):
    world = dist.get_world_size(group)
    my_size = torch.tensor([values.size(0)], device=values.device)
    sizes = [torch.zeros_like(my_size) for _ in range(world)]
    dist.all_gather(sizes, my_size, group=group)
    longest = int(max(s.item() for s in sizes))
    fill = longest - my_size.item()
    if fill > 0:
        values = torch.cat([values, values.new_zeros(fill, *values.shape[1:])])
    gathered = [torch.empty_like(values) for _ in range(world)]
    dist.all_gather(gathered, values, group=group)
    return [g[: int(s.item())] for g, s in zip(gathered, sizes)]


def gather_counts(counts, group=None):
    local = torch.tensor([counts.shape[0]], dtype=torch.int32)
    all_local = [torch.zeros_like(local) for _ in range(dist.get_world_size(group))]
    dist.all_gather(all_local, local, group=group)
    most = int(torch.stack(all_local).max().item())
    if local.item() < most:
        padded = torch.cat([counts, torch.zeros(most - local.item(), dtype=torch.int32).to(counts.device)], dim=0)
    else:
        padded = counts
    out = [torch.empty_like(padded) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, padded, group=group)
    return out


def step(model, batch):
    scores = model(batch)
    keep = scores[scores > 0]
    return gather_ragged(keep), gather_counts(keep.long())
