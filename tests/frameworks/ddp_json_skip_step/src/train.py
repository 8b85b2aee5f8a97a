"""torchrun --nnodes 2 --nproc-per-node 8 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from options import parse
from training.loop import train
from training.model import power_curve_model


def main():
    args = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(power_curve_model(), bucket_cap_mb=args.bucket_cap_mb)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    train(model, optimizer, args, rank)
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
