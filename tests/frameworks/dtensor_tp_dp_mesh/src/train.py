"""torchrun --nproc-per-node 4 train.py --dp 2 --tp 2"""

import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

from config import parse
from model.mlp import Regressor
from parallel.mesh import build_mesh, parallelize
from parallel.metrics import report_loss


def batches(dp_rank: int, cfg):
    g = torch.Generator().manual_seed(1234 + dp_rank)  # same data on the TP ranks of a replica
    w = torch.linspace(-1, 1, cfg.dim)
    for _ in range(cfg.steps):
        x = torch.randn(cfg.batch_size, cfg.dim, generator=g)
        yield x, (x @ w).unsqueeze(1)


def main():
    cfg = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    mesh = build_mesh(cfg)
    torch.manual_seed(0)
    model = parallelize(Regressor(cfg.dim, cfg.hidden), mesh)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    dp_rank = mesh["dp"].get_local_rank()
    for step, (x, y) in enumerate(batches(dp_rank, cfg), start=1):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % cfg.log_every == 0:
            report_loss(loss, mesh["dp"].get_group(), cfg.dp, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
