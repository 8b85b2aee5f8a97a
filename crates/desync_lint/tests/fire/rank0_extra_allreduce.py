# expect: DSY001 at line 15
"""Rank 0 alone all-reduces a logging window: its peers are in the next step's all_reduce."""
import torch
import torch.distributed as dist


def train(model, loader, optimizer, rank):
    window = 0.0
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        window += loss.item()
        if rank == 0 and step % 10 == 0:
            t = torch.tensor([window])
            dist.all_reduce(t)
            print(t.item())


def main(model, loader, optimizer):
    dist.init_process_group("nccl")
    train(model, loader, optimizer, dist.get_rank())
