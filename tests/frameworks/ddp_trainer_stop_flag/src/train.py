"""torchrun --nproc-per-node 4 train.py --config configs/vibration.json"""

import argparse
from datetime import timedelta

import torch
import torch.distributed as dist

from engine.callbacks import ConvergenceStopper, ThroughputMeter
from engine.config import load_config
from engine.trainer import Trainer
from sensors.windows import window_loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/vibration.json")
    cfg = load_config(parser.parse_args().config)
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(cfg.seed)
    loader = window_loader(rank, cfg)
    trainer = Trainer(cfg, loader, callbacks=[ThroughputMeter(), ConvergenceStopper(cfg.target_loss, cfg.patience)])
    summary = trainer.fit()
    if rank == 0:
        print(f"fleet summary: {summary}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
