"""One epoch of ZeRO-2 training through the DeepSpeed engine."""

import torch
import torch.nn.functional as F


def train_epoch(engine, loader, rank: int, epoch: int) -> dict:
    engine.train()
    total, correct, loss_sum = 0, 0, 0.0
    for step, (tokens, labels) in enumerate(loader):
        logits = engine(tokens)
        loss = F.cross_entropy(logits, labels)
        engine.backward(loss)
        engine.step()
        with torch.no_grad():
            correct += (logits.argmax(-1) == labels).sum().item()
            total += labels.numel()
            loss_sum += loss.item() * labels.numel()
    metrics = {"loss": loss_sum / max(total, 1), "acc": correct / max(total, 1)}
    print(f"rank {rank}: epoch {epoch} done after {step + 1} steps, "
          f"loss {metrics['loss']:.4f} acc {metrics['acc']:.3f}", flush=True)
    return metrics
