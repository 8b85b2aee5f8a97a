"""torchrun --nnodes 2 --nproc-per-node 2 train.py"""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from config import parse
from data.cache import build_cache
from data.shards import loader
from engine.loop import fit
from launch.env import init


def main():
    cfg = parse()
    env = init(cfg.dist_timeout_s)
    torch.manual_seed(cfg.seed)
    cache = build_cache(cfg, env)
    train_loader = loader(cache, env, cfg.batch_size)
    model = DistributedDataParallel(nn.Sequential(
        nn.Linear(cfg.channels * cfg.window, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, 1),
        nn.Flatten(0)))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    print(f"rank {env.rank}: {len(train_loader)} steps per epoch", flush=True)
    fit(model, optimizer, train_loader, cfg, env)


if __name__ == "__main__":
    main()
