"""End-of-epoch checkpoints of the DeepSpeed engine (model, ZeRO optimizer shards, client state)."""


def save_epoch(engine, cfg, epoch: int, metrics: dict) -> None:
    tag = f"epoch{epoch:03d}"
    # save_checkpoint is collective: every rank writes its own ZeRO optimizer shard, and
    # DeepSpeed itself lets only rank 0 create the folder and write the model states.
    engine.save_checkpoint(cfg.ckpt_dir, tag=tag, client_state={"epoch": epoch, **metrics})
    if engine.global_rank == 0:
        print(f"rank 0: saved checkpoint {tag}", flush=True)
