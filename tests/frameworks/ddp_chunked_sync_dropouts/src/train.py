"""torchrun --nproc-per-node 4 train.py"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from config import parse_args
from data.sensors import drift_readings, training_windows, valid
from engine.loop import train_epoch
from engine.monitor import fleet_drift
from models.forecaster import build_forecaster


def main():
    args = parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.dist_timeout_s))
    site = dist.get_rank()
    torch.manual_seed(args.seed)
    model = DDP(build_forecaster(args.features, args.hidden))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        windows = training_windows(site, epoch, args.steps, args.batch, args.features, args.seed)
        loss = train_epoch(model, optimizer, windows)
        readings = valid(drift_readings(site, epoch, args.readings, args.seed))
        drift = fleet_drift(readings, args.sync_chunk)
        print(f"rank {site}: epoch {epoch} loss {loss:.4f} drift {drift:.4f} "
              f"({len(readings)} readings)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
