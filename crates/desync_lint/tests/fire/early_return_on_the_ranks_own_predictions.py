# expect: DSY002 at line 25
"""Evaluation keeps the predictions above a confidence threshold and gathers them for the
report. A rank whose shard yields no confident prediction returns before the
all_gather_object its peers issue: the job hangs at the end of evaluation, once in a while,
depending on the data each rank drew."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def scores_of(model, loader):
    with torch.no_grad():
        return torch.cat([model(batch["inputs"]).softmax(-1) for batch in loader])


def evaluate(model, dataset, sampler, threshold=0.9):
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    return report(scores_of(model, loader), threshold)


def report(scores, threshold):
    best, labels = scores.max(-1)
    kept = [(int(l), float(b)) for l, b in zip(labels, best) if b >= threshold]
    if not kept:
        return None
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, kept)
    return [p for part in gathered for p in part]
