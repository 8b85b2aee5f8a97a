"""The same run state, but the counter is restored from a marker file: if each node read it
from its own local disk, a node that missed the last save would start from an older iteration,
break out of the loop later than the others, and its peers would wait in the gradient
all_reduce. The entry the loop tests is read from the host's file system alone, which a shared
file system gives alike to every rank far more often than not: indirect evidence, shown with
`--include-indirect` (tests/corpus.rs; the twin without the marker:
quiet/state_entries_read_by_key.py)."""
import os

import torch
import torch.distributed as dist


def last_iteration(marker):
    if not os.path.exists(marker):
        return 0
    with open(marker) as fh:
        return int(fh.read())


def fit(state, loader, max_iters):
    model = state["model"]
    optimizer = state["optimizer"]
    for batch in loader:
        if state["iter_num"] >= max_iters:
            break
        loss = model(batch).mean()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
        state["iter_num"] += 1


def main(loader, max_iters, marker):
    model = torch.nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    state = {"model": model, "optimizer": optimizer, "iter_num": last_iteration(marker)}
    fit(state, loader, max_iters)
