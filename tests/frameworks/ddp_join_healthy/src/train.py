"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from energy.sites import FEATURES, site_loader
from runner.epoch import run_epoch
from settings import parse


def main():
    args = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1)))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loader = site_loader(rank, args.batch_size)
    print(f"rank {rank}: {len(loader)} batches per epoch", flush=True)
    for epoch in range(args.epochs):
        loss_sum, rows = run_epoch(model, optimizer, loader).tolist()
        if rank == 0:
            print(f"epoch {epoch}: mean loss {loss_sum / rows:.4f} over {int(rows)} rows", flush=True)
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
