"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy

from callbacks import StopOnConvergence
from calib.data import SiteDataModule
from calib.model import Calibrator
from config import load


def main():
    cfg = load()
    pl.seed_everything(cfg.seed)
    trainer = pl.Trainer(
        accelerator="cpu", devices=cfg.devices, num_nodes=cfg.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=cfg.dist_timeout_s)),
        max_epochs=cfg.epochs,
        callbacks=[StopOnConvergence(cfg.target_loss, cfg.patience)],
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
        use_distributed_sampler=False,  # one measurement site per rank
    )
    data = SiteDataModule(cfg.readings_per_site, cfg.channels, cfg.batch_size, cfg.seed)
    trainer.fit(Calibrator(cfg.channels, cfg.lr), datamodule=data)
    print(f"rank {trainer.global_rank}: fit finished after {trainer.global_step} steps", flush=True)


if __name__ == "__main__":
    main()
