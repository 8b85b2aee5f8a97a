"""Training epochs and the end-of-epoch accuracy report."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def train_epoch(model, optimizer, loader, rank: int, epoch: int) -> None:
    model.train()
    correct = torch.zeros(2)
    for tokens, meta, has_meta, queue in loader:
        logits = model(tokens, meta, has_meta)
        loss = F.cross_entropy(logits, queue)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        correct += torch.tensor([(logits.argmax(-1) == queue).sum().item(), queue.numel()])
    dist.all_reduce(correct)
    if rank == 0:
        print(f"epoch {epoch}: train accuracy {correct[0] / correct[1]:.3f}", flush=True)
