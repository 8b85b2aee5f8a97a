"""torchrun --nproc-per-node 4 train.py   (2 pipeline stages x 2 data-parallel replicas)"""

from datetime import timedelta

import torch
import torch.distributed as dist

from config import parse
from data.meters import batches
from engine.loop import train
from model.regressor import build_stage_module
from parallel.pipeline import SchedulePool
from parallel.topology import build_topology


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    topo = build_topology(cfg.stages)
    module = build_stage_module(topo.stage, cfg.features, cfg.hidden)
    pool = SchedulePool(module, topo, cfg.micro_size)
    optimizer = torch.optim.AdamW(module.parameters(), lr=cfg.lr)
    print(f"rank {topo.rank}: stage {topo.stage} replica {topo.replica}", flush=True)
    data = batches(topo.replica, cfg.steps, cfg.batch, cfg.features, cfg.seed)
    updates = train(pool, module, optimizer, topo, data)
    print(f"rank {topo.rank}: {updates} updates", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
