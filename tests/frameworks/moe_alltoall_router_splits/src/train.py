"""torchrun --nproc-per-node 4 train.py   (expert parallel: expert i lives on rank i)"""

import logging
from datetime import timedelta

import torch
import torch.distributed as dist

from config import parse
from data.corpus import shard_batches
from engine.step import train_step
from moe.model import MoELM


def main():
    cfg = parse()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)  # dense weights identical on every rank
    model = MoELM(cfg, num_experts=world, expert_seed=cfg.seed * 1000 + rank)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for step, (tokens, mask) in enumerate(shard_batches(rank, cfg), start=1):
        loss = train_step(model, optimizer, tokens, mask)
        print(f"rank {rank}: step {step} loss {loss:.3f}", flush=True)
    print(f"rank {rank}: finished {cfg.steps} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
