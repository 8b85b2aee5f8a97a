"""One pass over this rank's shard."""

import torch.nn.functional as F

from trainer.metrics import EpochMetrics


def train_epoch(model, optimizer, loader, rank: int, epoch: int) -> dict:
    model.train()
    metrics = EpochMetrics()
    batches = 0
    for batch in loader:
        inputs, labels = batch
        logits = model(inputs)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metrics.update(loss.detach(), logits.detach(), labels)
        batches += 1
    print(f"rank {rank}: epoch {epoch} done after {batches} batches", flush=True)
    return metrics.summarize()
