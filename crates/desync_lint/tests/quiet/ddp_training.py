"""A standard DDP loop: every rank runs forward, backward and the same collectives."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(model, loader, optimizer, args, local_rank):
    model = DDP(model, device_ids=[local_rank])
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader):
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % args.log_every == 0:
                stats = torch.tensor([loss.item()])
                dist.all_reduce(stats)
                if local_rank == 0:
                    print(stats.item() / dist.get_world_size())
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), args.out)
        # A small local model trained on rank 0 only: not wrapped, so no collectives.
        probe = torch.nn.Linear(4, 1)
        probe_loss = probe(torch.randn(8, 4)).sum()
        probe_loss.backward()
    dist.barrier()
