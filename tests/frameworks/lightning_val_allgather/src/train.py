"""torchrun --nproc-per-node 4 train.py"""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy

from churn.datamodule import ChurnData
from churn.module import ChurnModule
from config import from_cli


def main():
    cfg = from_cli()
    pl.seed_everything(cfg.seed)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=cfg.devices,
        num_nodes=cfg.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=cfg.dist_timeout_s)),
        max_epochs=cfg.epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(ChurnModule(cfg.hidden, cfg.lr, cfg.calibration_bins),
                datamodule=ChurnData(cfg.customers, cfg.holdout, cfg.batch_size, cfg.seed))


if __name__ == "__main__":
    main()
