"""Distributed evaluation that shards the validation files the way DistributedSampler does
without padding: the sorted list is cut to a multiple of the world size, then strided by the
rank, so every rank gets the same number of files and runs the per-file all_reduce as often
as its peers. (Without the cut: fire/eval_shard_strided_by_rank.py.)"""
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
    per_rank = len(files) // world
    total = per_rank * world
    mine = files[rank:total:world]
    correct = torch.zeros(1)
    for path in mine:
        batch = load_file(path)
        hits = score(model, batch)
        dist.all_reduce(hits)
        correct += hits
    return correct.item()
