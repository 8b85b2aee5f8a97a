# expect: DSY002 at line 16
"""Early stopping on each rank's own validation loss."""
import torch.distributed as dist


def train(model, loader, val_loader, optimizer, patience):
    best, bad_epochs = float("inf"), 0
    for epoch in range(100):
        for batch in loader:
            loss = model(batch)
            loss.backward()
            sync_gradients(model)
            optimizer.step()
        val_loss = sum(model(x).item() for x in val_loader)
        if val_loss >= best and bad_epochs > patience:
            break
        best = min(best, val_loss)
    dist.barrier()


def sync_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad)
