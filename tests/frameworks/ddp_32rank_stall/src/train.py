"""torchrun --nnodes 4 --nproc-per-node 8 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from config import parse
from data.shards import clear_own_shards, default_root, write_shard
from engine.loop import train


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank = dist.get_rank()
    root = default_root(cfg)
    clear_own_shards(root, rank, cfg.epochs)
    write_shard(root, 0, rank, cfg)
    torch.manual_seed(cfg.seed)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(cfg.features, cfg.hidden), nn.Tanh(), nn.Linear(cfg.hidden, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    train(model, optimizer, root, rank, cfg)
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
