"""One training epoch and one evaluation pass, written for any number of processes."""

import torch
import torch.nn.functional as F


def train_one_epoch(accelerator, model, optimizer, loader, epoch):
    model.train()
    running = torch.zeros((), device=accelerator.device)
    for tokens, labels in loader:
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        running += loss.detach()
    mean_loss = accelerator.reduce(running, reduction="mean") / len(loader)
    accelerator.print(f"epoch {epoch}: train loss {mean_loss.item():.4f}")


@torch.no_grad()
def evaluate(accelerator, model, loader):
    model.eval()
    correct = total = 0
    for tokens, labels in loader:
        preds = model(tokens).argmax(dim=-1)
        # gather_for_metrics drops the samples the sampler repeated to even out the ranks.
        preds, labels = accelerator.gather_for_metrics((preds, labels))
        correct += (preds == labels).sum().item()
        total += labels.numel()
    return correct / total, total
