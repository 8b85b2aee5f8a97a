"""torchrun --nproc-per-node 4 train.py --shard-dir shards/tariffs-v3"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from config import parse_args
from data.shards import ShardLoader
from models.mlp import tariff_classifier
from trainer.loop import train_epoch


def main():
    args = parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    loader = ShardLoader(args.shard_dir, rank, args.batch_size, args.features, args.classes,
                         args.seed)
    model = DDP(tariff_classifier(args.features, args.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        summary = train_epoch(model, optimizer, loader, rank, epoch)
        if rank == 0:
            print(f"epoch {epoch}: {summary}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
