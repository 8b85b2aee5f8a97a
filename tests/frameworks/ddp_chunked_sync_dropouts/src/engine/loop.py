import torch.nn.functional as F


def train_epoch(model, optimizer, windows) -> float:
    total = 0.0
    for x, y in windows:
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(windows)
