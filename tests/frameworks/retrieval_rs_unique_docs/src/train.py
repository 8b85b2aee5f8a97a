"""torchrun --nproc-per-node 4 train.py   (contrastive retriever, hard negatives from a sharded table)"""

from datetime import timedelta

import torch
import torch.distributed as dist

from comm.collectives import mean_scalar
from config import parse
from data.clicks import click_batches
from mining.candidates import CandidatePool
from mining.tables import NegativeTable


def main():
    cfg = parse()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)
    encoder = torch.nn.Sequential(torch.nn.Linear(1, cfg.dim), torch.nn.Tanh())
    query_proj = torch.nn.Linear(cfg.dim, cfg.dim)
    anchors = torch.randn(cfg.anchors, cfg.dim)
    table = NegativeTable(encoder, anchors, CandidatePool(world))
    optimizer = torch.optim.SGD(query_proj.parameters(), lr=cfg.lr)
    for step, (queries, doc_ids) in enumerate(click_batches(rank, cfg), start=1):
        negatives = table.build(doc_ids)
        q = query_proj(queries)
        hard = negatives.max(dim=0).values
        loss = torch.relu(1.0 + q @ anchors.T @ torch.ones(cfg.anchors) / cfg.anchors
                          - hard.mean()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"rank {rank}: step {step} table {negatives.shape[0] * world} rows "
              f"loss {mean_scalar(loss.item()):.3f}", flush=True)
    print(f"rank {rank}: finished {cfg.steps} steps", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
