"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from config import parse
from engine.accumulate import train_epoch
from lm.corpus import shard_loader
from lm.model import TinyLM


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(cfg.seed)
    loader, source = shard_loader(rank, cfg)
    print(f"rank {rank}: source {source}, {len(loader.dataset)} documents", flush=True)
    model = DistributedDataParallel(TinyLM(cfg.vocab, cfg.d_model, cfg.heads, cfg.max_len))
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        train_epoch(model, optimizer, loader, cfg, rank, epoch)
    if rank == 0:
        torch.save(model.module.state_dict(), "tiny_lm.pt")
        print("saved tiny_lm.pt", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
