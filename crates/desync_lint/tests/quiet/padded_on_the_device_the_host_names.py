"""Gathering per-stage routing tables whose middle dimension (layers per stage) differs: the
counts are all-gathered, and a stage short of the longest pads up to it. The table is first
moved to the accelerator the host reports (`-> str`: a device's name, read from the host's
setup), which says where the tensor lives, not what it holds or how large it is."""
import os

import torch
import torch.distributed as dist


def accelerator_name() -> str:
    return os.environ.get("ACCELERATOR", "cuda")


DEVICE = accelerator_name()


def gather_routes(routes, group):
    world = dist.get_world_size(group)
    payload = routes.to(DEVICE).contiguous()
    count = torch.tensor([routes.shape[1]], device=payload.device)
    counts = [torch.empty_like(count) for _ in range(world)]
    dist.all_gather(counts, count, group=group)
    longest = max(int(c.item()) for c in counts)
    if payload.shape[1] != longest:
        shape = list(payload.shape)
        shape[1] = longest
        padded = torch.zeros(shape, dtype=payload.dtype, device=payload.device)
        padded[:, : payload.shape[1]].copy_(payload)
        payload = padded
    parts = [torch.empty_like(payload) for _ in range(world)]
    dist.all_gather(parts, payload, group=group)
    return [p[:, : int(c.item())] for p, c in zip(parts, counts)]
