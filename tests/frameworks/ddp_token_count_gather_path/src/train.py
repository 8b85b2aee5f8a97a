"""torchrun --nproc-per-node 4 train.py --steps 16"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from config import parse
from lm.data import batches, source_for
from lm.model import TinyLM
from trainer.loop import pretrain


def main():
    cfg = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(cfg.seed)
    print(f"rank {rank}: streaming source {source_for(rank)}", flush=True)
    model = DistributedDataParallel(TinyLM(cfg.vocab, cfg.dim, cfg.context))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    seen = pretrain(model, opt, batches(rank, cfg.vocab, cfg.context, cfg.batch_size, cfg.seed), cfg, rank)
    print(f"rank {rank}: done, {seen} local tokens", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
