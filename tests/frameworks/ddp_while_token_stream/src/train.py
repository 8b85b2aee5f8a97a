"""torchrun --nproc-per-node 4 train.py --token-budget 256"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from config import parse_args
from data.stream import PackedStream
from engine.loop import run_epoch
from models.bigram import Bigram


def main():
    args = parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(args.seed)
    stream = PackedStream(rank, args.docs_per_shard, args.vocab, args.token_budget, args.seed)
    model = DDP(Bigram(args.vocab, args.dim))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    total = run_epoch(model, optimizer, stream, rank)
    if rank == 0:
        print(f"epoch loss sum {total:.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
