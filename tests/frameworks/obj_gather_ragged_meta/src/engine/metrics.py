"""Evaluation metrics: global logloss, and a per-row table of cold-start predictions
for the error report (so the report sees every shard's rows, on every rank)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def gather_rows(rows):
    """All ranks' report rows, on every rank."""
    if not rows:
        return []
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, rows)
    return [r for part in parts for r in part]


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total = torch.zeros(2)
    cold_rows = []
    for row, user, item, clicked, cold in loader:
        logits = model(user, item)
        loss = F.binary_cross_entropy_with_logits(logits, clicked, reduction="sum")
        total += torch.stack([loss, torch.tensor(float(len(clicked)))])
        for r, p, y in zip(row[cold].tolist(), logits[cold].sigmoid().tolist(), clicked[cold].tolist()):
            cold_rows.append({"row": r, "p_click": round(p, 4), "clicked": y})
    dist.all_reduce(total)
    cold_table = gather_rows(cold_rows)
    model.train()
    return {"logloss": (total[0] / total[1]).item(), "cold_start": cold_table}
