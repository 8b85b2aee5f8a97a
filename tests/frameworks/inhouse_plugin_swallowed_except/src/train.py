"""torchrun --nproc-per-node 4 train.py [config.yaml]"""

import logging
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

import plugins  # noqa: F401  (registers the hooks)
from fraud.data import region_loader
from fraud.model import Scorer
from stack.config import load
from stack.trainer import fit


def main():
    cfg = load(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).with_name("config.yaml"))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.run.dist_timeout_s))
    rank = dist.get_rank()
    torch.manual_seed(cfg.run.seed)
    rows = cfg.run.steps * cfg.data.batch
    loader = region_loader(rank, rows, cfg.data.batch, cfg.data.features, cfg.run.seed)
    state = fit(Scorer(cfg.data.features, cfg.model.hidden), loader, cfg, rank)
    print(f"rank {rank}: {cfg.run.name} done at step {state.step}, loss {state.loss:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
