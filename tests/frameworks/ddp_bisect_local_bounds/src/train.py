"""torchrun --nproc-per-node 4 train.py --alert-rate 0.05"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from config import parse_args
from engine.epoch import train_epoch


def main():
    args = parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(args.features, 12), torch.nn.ReLU(),
                                    torch.nn.Linear(12, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed + rank)
    for epoch in range(args.epochs):
        threshold = train_epoch(model, optimizer, g, rank, args)
        print(f"rank {rank}: epoch {epoch} alert threshold {threshold:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
