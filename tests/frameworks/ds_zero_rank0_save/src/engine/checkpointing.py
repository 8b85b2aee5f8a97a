"""End-of-epoch checkpoints of the DeepSpeed engine (model, ZeRO optimizer shards, client state)."""

import os


def save_epoch(engine, cfg, epoch: int, metrics: dict) -> None:
    tag = f"epoch{epoch:03d}"
    # Only one process should touch the checkpoint folder.
    if engine.global_rank == 0:
        os.makedirs(cfg.ckpt_dir, exist_ok=True)
        engine.save_checkpoint(cfg.ckpt_dir, tag=tag, client_state={"epoch": epoch, **metrics})
        print(f"rank 0: saved checkpoint {tag}", flush=True)
