# expect: DSY002 at line 12
"""A rank whose loss is not finite skips the gradient all_reduce its peers wait in."""
import torch
import torch.distributed as dist


def train(model, loader, optimizer):
    for batch in loader:
        optimizer.zero_grad()
        loss = model(batch)
        if not torch.isfinite(loss):
            continue
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()
