"""Recall on confirmed fraud (chargebacks) over the last window, averaged over ranks."""

import torch
import torch.distributed as dist

from stack.registry import hook

THRESHOLD = 0.5


@hook("after_steps", name="fraud_recall")
def fraud_recall(state):
    frauds = [score for score, label in state.window if label == 1.0]
    caught = sum(score >= THRESHOLD for score in frauds)
    recall = torch.tensor([caught / len(frauds)])
    dist.all_reduce(recall)
    if state.rank == 0:
        print(f"step {state.step}: fraud recall {float(recall) / dist.get_world_size():.3f}",
              flush=True)
