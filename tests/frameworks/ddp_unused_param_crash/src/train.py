"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from config import parse
from engine.loop import train_epoch
from triage.model import TicketRouter
from triage.tickets import shard_loader


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)
    loader = shard_loader(rank, world, cfg)
    model = DistributedDataParallel(
        TicketRouter(cfg.vocab, cfg.meta_features, cfg.d_model, cfg.n_queues))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    print(f"rank {rank}: {len(loader)} batches per epoch", flush=True)
    for epoch in range(cfg.epochs):
        train_epoch(model, optimizer, loader, rank, epoch)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
