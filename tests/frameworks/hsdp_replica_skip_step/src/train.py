"""torchrun --nproc-per-node 4 train.py   (HSDP: 2 replicas x 2 shards)"""

from datetime import timedelta

import torch
import torch.distributed as dist

from config import parse
from data.sensors import plant_batches
from engine.loop import train
from model.regressor import Regressor
from parallel.mesh import apply_hsdp, build_topology


def main():
    cfg = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank = dist.get_rank()
    topo = build_topology(cfg.replicate)
    torch.manual_seed(cfg.seed)
    model = apply_hsdp(Regressor(cfg.features, cfg.hidden, cfg.blocks), topo)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    batches = plant_batches(topo.replica, topo.shard, topo.num_shards, cfg)
    updates = train(model, optimizer, batches, topo, rank)
    print(f"rank {rank}: {updates} updates", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
