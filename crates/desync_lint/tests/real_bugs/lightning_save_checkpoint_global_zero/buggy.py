"""Training entry point for an encoder-processor-decoder model with Lightning DDP.

After `fit()` returns, the script writes a final checkpoint from the global-zero process
only, then every rank meets in a barrier that finalises checkpoint aliases.
`Trainer.save_checkpoint` ends in `strategy.barrier()`, so rank 0's extra barrier pairs
with the others' finalize barrier, and rank 0 then waits alone in its own finalize barrier
until the NCCL watchdog fires.
"""
from pathlib import Path

import lightning.pytorch as L
from lightning.pytorch.callbacks import ModelCheckpoint


def finalize_aliases(trainer, out_dir):
    if trainer.is_global_zero:
        best = trainer.checkpoint_callback.best_model_path
        if best:
            link = Path(out_dir) / "best.ckpt"
            link.unlink(missing_ok=True)
            link.symlink_to(Path(best).resolve())
    trainer.strategy.barrier("checkpoint-alias-finalize")


def run_training(model, datamodule, cfg):
    checkpoint = ModelCheckpoint(dirpath=cfg.out_dir, monitor="val_loss", save_top_k=3, save_last=True)
    trainer = L.Trainer(
        accelerator="gpu",
        devices=cfg.devices,
        strategy="ddp",
        max_epochs=cfg.max_epochs,
        callbacks=[checkpoint],
    )
    trainer.fit(model, datamodule=datamodule)
    if trainer.is_global_zero:  # BUG: save_checkpoint's barrier runs on rank 0 only
        trainer.save_checkpoint(Path(cfg.out_dir) / "final.ckpt")
    finalize_aliases(trainer, cfg.out_dir)
    return trainer
