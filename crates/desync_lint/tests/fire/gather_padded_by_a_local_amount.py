# expect: DSY005 at line 20
# expect: DSY005 at line 34
"""The pad-to-the-longest fix gone wrong: each rank pads its kept scores by a fixed amount, not
up to the longest length gathered first, so ranks with fewer scores still send fewer rows;
and the counts are padded only on the ranks whose count is below a local guess."""
import torch
import torch.distributed as dist


def gather_ragged(values, group=None):
    world = dist.get_world_size(group)
    my_size = torch.tensor([values.size(0)], device=values.device)
    sizes = [torch.zeros_like(my_size) for _ in range(world)]
    dist.all_gather(sizes, my_size, group=group)
    longest = int(max(s.item() for s in sizes))
    fill = 8 - my_size.item() % 8
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
    if local.item() < 16:
        padded = torch.cat([counts, torch.zeros(16 - local.item(), dtype=torch.int32)], dim=0)
    else:
        padded = counts
    out = [torch.empty_like(padded) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, padded, group=group)
    return out


def step(model, batch):
    scores = model(batch)
    keep = scores[scores > 0]
    return gather_ragged(keep), gather_counts(keep.long())
