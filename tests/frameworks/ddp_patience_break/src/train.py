"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from config import cli
from engine.fit import fit
from pricing.markets import FEATURES, market_loaders


def main():
    args = cli()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    train_loader, val_loader, market = market_loaders(rank, args.train_rows, args.val_rows,
                                                      args.batch_size, args.seed)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(FEATURES, 16), nn.Tanh(),
                                                  nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    score = fit(model, optimizer, train_loader, val_loader, args, rank)
    if rank == 0:
        print(f"best validation loss over markets: {score:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
