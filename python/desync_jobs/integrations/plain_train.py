"""Data-parallel training under torchrun with nothing of desync in it (``desync run`` tests).

    torchrun --nproc-per-node 4 plain_train.py --stall-rank 2
"""

import datetime
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from regression import build_model, parser, shard_store


def allreduce_gradients(model, world_size):
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def main():
    args = parser(__doc__).parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = build_model()
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    shards = shard_store(args)
    for step in range(1, args.steps + 1):
        x, y = shards.read(rank, step)
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        allreduce_gradients(model, world_size)
        optimizer.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} done (pid {os.getpid()})", flush=True)


if __name__ == "__main__":
    main()
