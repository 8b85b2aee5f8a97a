"""Holdout metrics, summed over every process's shard of the holdout."""

import torch


def class_recall(accelerator, preds, labels, cls: int) -> float:
    """Recall of one defect class over the whole holdout."""
    mask = labels == cls
    if not mask.any():
        # no wafer of this class in the shard: recall is undefined, nothing to add
        return float("nan")
    hits = (preds[mask] == cls).sum()
    counts = torch.stack([hits, mask.sum()])
    hits, total = accelerator.reduce(counts, reduction="sum").tolist()
    return hits / total


def per_class_recall(accelerator, preds, labels, names) -> dict:
    return {name: class_recall(accelerator, preds, labels, cls) for cls, name in enumerate(names)}
