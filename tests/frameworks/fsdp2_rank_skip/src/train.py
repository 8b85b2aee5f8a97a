"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

from config import parse
from data.packing import packed_batches
from lm.model import TinyLM
from lm.sharding import shard_model


def masked_loss(logits, targets, mask):
    per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    return (per_token * mask.flatten()).sum() / mask.sum()


def main():
    cfg = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(cfg.seed)
    model = shard_model(TinyLM(cfg.vocab, cfg.dim, cfg.layers), world)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    tokens_seen = torch.zeros(1)
    for step, batch in enumerate(packed_batches(rank, cfg.steps, cfg.batch_size, cfg.context,
                                                cfg.vocab, cfg.seed)):
        if batch["mask"].sum() == 0:
            print(f"rank {rank}: batch {step} is all padding, skipping", flush=True)
            continue
        loss = masked_loss(model(batch["inputs"]), batch["targets"], batch["mask"])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        tokens_seen += batch["mask"].sum()
    dist.all_reduce(tokens_seen)
    if rank == 0:
        print(f"trained on {int(tokens_seen.item())} tokens", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
