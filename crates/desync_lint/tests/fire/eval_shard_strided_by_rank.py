# expect: DSY002 at line 30
"""Distributed evaluation that shards the validation files by striding over them with the
rank. With 10 files on 4 ranks, ranks 0 and 1 get 3 files and ranks 2 and 3 get 2: the
ranks with fewer files leave the loop while the others wait in the per-file all_reduce.
(Cutting the list to a multiple of the world size first keeps every shard equally long:
quiet/eval_shard_truncated_to_a_multiple.py.)"""
import glob
import os

import torch
import torch.distributed as dist


def load_file(path):
    return torch.load(path, weights_only=True)


def score(model, batch):
    with torch.no_grad():
        logits = model(batch["x"])
    return (logits.argmax(-1) == batch["y"]).float().sum()


def evaluate(model, folder):
    rank = dist.get_rank()
    world = dist.get_world_size()
    files = sorted(glob.glob(os.path.join(folder, "*.pt")))
    mine = files[rank::world]
    correct = torch.zeros(1)
    for path in mine:
        batch = load_file(path)
        hits = score(model, batch)
        dist.all_reduce(hits)
        correct += hits
    return correct.item()
