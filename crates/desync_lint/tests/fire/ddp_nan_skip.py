# expect: DSY002 at line 15
"""DDP: a rank that skips backward on a non-finite loss skips its gradient all_reduce."""
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def train(model, loader, optimizer, local_rank):
    ddp_model = DistributedDataParallel(model, device_ids=[local_rank])
    for inputs, targets in loader:
        optimizer.zero_grad()
        outputs = ddp_model(inputs)
        loss = F.cross_entropy(outputs, targets)
        if torch.isnan(loss):
            continue
        loss.backward()
        optimizer.step()
