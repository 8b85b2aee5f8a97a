"""The fix of fire/early_return_on_the_ranks_own_predictions.py: the ranks agree on how many
confident predictions exist before any of them returns, so either all return or all gather;
and a helper that returns early on its own argument's emptiness, outside any loop, is left
alone when nothing shows the argument is the rank's data (a caller passing a config list)."""
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
    total = torch.tensor([len(kept)])
    dist.all_reduce(total)
    if total.item() == 0:
        return None
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, kept)
    return [p for part in gathered for p in part]


def sync_buffers(buffers):
    if not buffers:
        return
    for b in buffers:
        dist.broadcast(b, 0)


def setup(model, config):
    sync_buffers([b for name, b in model.named_buffers() if name in config["synced_buffers"]])
