import torch.nn.functional as F


def train_one_epoch(accelerator, model, optimizer, loader) -> float:
    model.train()
    total, batches = 0.0, 0
    for wafers, labels in loader:
        loss = F.cross_entropy(model(wafers), labels)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        total, batches = total + loss.item(), batches + 1
    return total / max(batches, 1)
