"""torchrun --nnodes 2 --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist

from comm.topology import build
from config import parse
from data.vibration import pump_batches
from engine.loop import train
from engine.model import AnomalyNet


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    topo = build()
    print(f"rank {topo.rank}: node {topo.node} local rank {topo.local_rank}"
          f"{' (leader)' if topo.is_leader else ''}", flush=True)
    torch.manual_seed(cfg.seed)
    model = AnomalyNet(cfg.channels, cfg.window, cfg.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    batches = pump_batches(topo.rank, cfg.steps, cfg.batch, cfg.channels, cfg.window, cfg.seed)
    done = train(model, optimizer, batches, topo, cfg)
    print(f"rank {topo.rank}: {done} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
