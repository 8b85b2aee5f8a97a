"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from config import parse
from engine.loop import fit
from fraud.data import loaders
from fraud.model import FraudScorer


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)
    train_loader, holdout_loader, sampler = loaders(cfg, rank, world)
    model = DistributedDataParallel(FraudScorer(cfg.features, cfg.hidden))
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    print(f"rank {rank}: torch {torch.__version__}, {len(train_loader)} steps per epoch", flush=True)
    fit(model, optimizer, train_loader, holdout_loader, sampler, cfg, rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
