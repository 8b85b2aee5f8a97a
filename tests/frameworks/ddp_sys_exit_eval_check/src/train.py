"""torchrun --nproc-per-node 4 train.py --steps 40 --eval-every 10"""

import logging
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from config import parse_args
from engine.evaluate import holdout_accuracy


def main():
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(args.features, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    g = torch.Generator().manual_seed(args.seed + rank)
    for step in range(1, args.steps + 1):
        x = torch.randn(args.batch_size, args.features, generator=g)
        y = (x[:, :1] > 0).float()
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % args.eval_every == 0:
            acc = holdout_accuracy(model, rank, step // args.eval_every, args.features, args.seed)
            if rank == 0:
                print(f"step {step}: holdout accuracy {acc:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
