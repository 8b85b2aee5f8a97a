"""torchrun --nnodes 4 --nproc-per-node 2 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from config import load_config
from model.ctr import CTRModel
from trainer.loop import train


def main():
    cfg = load_config()
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(CTRModel())
    optimizer = torch.optim.Adagrad(model.parameters(), lr=cfg.lr)
    print(f"rank {rank}: bf16 autocast {'on' if cfg.bf16 else 'off'}", flush=True)
    train(model, optimizer, cfg, rank, world_size)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
