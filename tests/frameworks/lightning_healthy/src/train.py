"""Entry point: `torchrun --nproc-per-node 4 train.py [--max-epochs N ...]`."""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint
from pytorch_lightning.loggers import CSVLogger
from pytorch_lightning.strategies import DDPStrategy

from callbacks import ThroughputMonitor
from config import parse_args
from data import DemandDataModule
from data.datamodule import FEATURES
from models import DemandRegressor


def main():
    cfg = parse_args()
    pl.seed_everything(cfg.seed, workers=True)
    datamodule = DemandDataModule(cfg.train_rows, cfg.val_rows, cfg.batch_size, cfg.seed)
    model = DemandRegressor(FEATURES, cfg.hidden, cfg.lr)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=cfg.devices,
        num_nodes=cfg.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=cfg.dist_timeout_s)),
        max_epochs=cfg.max_epochs,
        logger=CSVLogger(cfg.output_dir, name="demand"),
        callbacks=[ThroughputMonitor(),
                   ModelCheckpoint(dirpath=f"{cfg.output_dir}/ckpt", monitor="val/mse",
                                   save_last=True)],
        num_sanity_val_steps=0,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, datamodule=datamodule)
    if trainer.is_global_zero:
        print(f"done: best checkpoint {trainer.checkpoint_callback.best_model_path}", flush=True)


if __name__ == "__main__":
    main()
