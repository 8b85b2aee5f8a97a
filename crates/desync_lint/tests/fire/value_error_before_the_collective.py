# expect: DSY003 at line 31
# expect: DSY003 at line 42
"""Handlers of a ValueError that do skip a collective: in the first, the rank's own shard
header is parsed (and can be malformed on one rank) before the all_gather of the lengths; in
the second, the all_reduce comes first but the broadcast after the parse is still skipped."""
import json

import torch
import torch.distributed as dist


def read_header(path):
    with open(path) as fh:
        return json.loads(fh.readline())


def gather_lengths(path, world_size):
    header = read_header(path)
    if header["rows"] < 0:
        raise ValueError("negative row count")
    length = torch.tensor([header["rows"]])
    lengths = [torch.zeros_like(length) for _ in range(world_size)]
    dist.all_gather(lengths, length)
    return lengths


def sizes(path, world_size):
    try:
        lengths = gather_lengths(path, world_size)
        return lengths
    except ValueError:
        return None


def sync_then_share(path, counts):
    try:
        dist.all_reduce(counts)
        rows = read_header(path)["rows"]
        if rows < 0:
            raise ValueError("negative row count")
        dist.broadcast(counts, 0)
    except ValueError:
        return None
    return counts
