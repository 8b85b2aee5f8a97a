"""A pretraining script keeps its run state in a dict: the model (whose setup reads this
node's environment: which logger to use, where to cache), the optimizer, and the iteration
counter every rank starts at 0 and advances once per step. The fit loop stops on the
counter; the counter's entry holds nothing of the environment the model's entry carries, so
every rank breaks on the same iteration."""
import os

import torch
import torch.distributed as dist


def build_model(cache_dir):
    model = torch.nn.Linear(16, 1)
    model.cache_dir = cache_dir
    return model


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


def main(loader, max_iters):
    model = build_model(os.environ.get("NODE_CACHE_DIR", "/tmp"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    state = {"model": model, "optimizer": optimizer, "iter_num": 0}
    fit(state, loader, max_iters)
