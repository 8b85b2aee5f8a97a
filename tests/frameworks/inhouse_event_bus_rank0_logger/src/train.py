"""torchrun --nproc-per-node 4 train.py configs/run.yaml"""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import yaml
from torch.nn.parallel import DistributedDataParallel as DDP

from core.events import EventBus
from core.trainer import Trainer
from telemetry.metrics import MetricsWriter


def build(cfg, rank):
    bus = EventBus()
    if rank == cfg["telemetry"]["writer_rank"]:
        bus.subscribe("step_end", MetricsWriter(cfg["telemetry"]["flush_every"]).on_step_end)
    m = cfg["model"]
    model = DDP(torch.nn.Sequential(torch.nn.Linear(m["features"], m["hidden"]), torch.nn.ReLU(),
                                    torch.nn.Linear(m["hidden"], 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["train"]["lr"])
    return Trainer(model, optimizer, bus, cfg, rank)


def main():
    with open(sys.argv[1]) as f:
        cfg = yaml.safe_load(f)
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg["dist_timeout_s"]))
    rank = dist.get_rank()
    torch.manual_seed(cfg["seed"])
    build(cfg, rank).fit()
    print(f"rank {rank}: done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
