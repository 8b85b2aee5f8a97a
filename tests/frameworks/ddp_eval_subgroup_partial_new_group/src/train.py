"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from config import parse
from data.churn import train_loader
from engine.trainer import Trainer


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(cfg.seed)
    net = nn.Sequential(nn.Linear(cfg.features, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 1),
                        nn.Flatten(0))
    model = DistributedDataParallel(net)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    Trainer(model, optimizer, train_loader(cfg, rank), cfg, rank).run()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
