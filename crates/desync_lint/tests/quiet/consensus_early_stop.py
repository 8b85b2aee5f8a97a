"""Early stopping done right: the stop decision is all-reduced before anyone breaks."""
import torch
import torch.distributed as dist


def train(model, loader, val_loader, optimizer, target):
    for epoch in range(100):
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            for p in model.parameters():
                dist.all_reduce(p.grad)
            optimizer.step()
        val_loss = evaluate(model, val_loader)
        stop = torch.tensor([float(val_loss < target)])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item() > 0:
            break
    dist.barrier()


def train_with_rebound_flag(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        flag = torch.tensor(int(not torch.isfinite(loss)))
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        skip = flag.item() > 0
        if skip:
            continue
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        optimizer.step()


def evaluate(model, val_loader):
    total = torch.zeros(2)
    for x, y in val_loader:
        total += torch.tensor([model(x, y).item(), 1.0])
    dist.all_reduce(total)
    return (total[0] / total[1]).item()
