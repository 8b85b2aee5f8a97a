"""torchrun --nnodes 4 --nproc-per-node 2 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist

from config import parse
from engine.stages import finetune, pretrain


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(cfg.seed)
    pretrain(cfg, rank)
    accuracy = finetune(cfg, rank)
    if rank == 0:
        print(f"pump-fault classifier: accuracy {accuracy:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
