"""Epochs over the prepared loader."""

import torch.nn.functional as F


def fit(accelerator, model, optimizer, loader, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.print(f"epoch {epoch}: last loss {loss.item():.4f}")
