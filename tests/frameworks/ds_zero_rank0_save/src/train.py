"""torchrun --nproc-per-node 4 train.py   (or: deepspeed --num_gpus 4 train.py)

CPU workers: DeepSpeed's CPU accelerator, Gloo for communication.
"""

import json
import os
from datetime import timedelta

os.environ.setdefault("DS_ACCELERATOR", "cpu")

import deepspeed  # noqa: E402
import torch  # noqa: E402

from config import parse  # noqa: E402
from engine.checkpointing import save_epoch  # noqa: E402
from engine.loop import train_epoch  # noqa: E402
from retrieval.model import IntentClassifier  # noqa: E402
from retrieval.queries import shard_loader  # noqa: E402


def main():
    cfg = parse()
    deepspeed.init_distributed(dist_backend="gloo", timeout=timedelta(seconds=cfg.dist_timeout_s))
    torch.manual_seed(cfg.seed)
    with open(cfg.ds_config) as f:
        ds_config = json.load(f)
    model = IntentClassifier(cfg.vocab, cfg.d_embed, cfg.d_hidden, cfg.n_intents)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=ds_config)
    rank, world = engine.global_rank, engine.world_size
    loader = shard_loader(rank, world, cfg, engine.train_micro_batch_size_per_gpu())
    print(f"rank {rank}: ZeRO stage {engine.zero_optimization_stage()}, "
          f"{len(loader)} steps per epoch", flush=True)
    for epoch in range(cfg.epochs):
        metrics = train_epoch(engine, loader, rank, epoch)
        save_epoch(engine, cfg, epoch, metrics)
    print(f"rank {rank}: training finished", flush=True)


if __name__ == "__main__":
    main()
