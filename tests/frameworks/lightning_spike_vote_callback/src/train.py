"""torchrun --nproc-per-node 4 train.py --epochs 2"""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy

from callbacks.spike_guard import LossSpikeGuard
from config import load
from turbines.data import ScadaDataModule
from turbines.model import PowerForecaster


def build_trainer(cfg):
    return pl.Trainer(
        accelerator="cpu", devices=cfg.devices, num_nodes=cfg.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=cfg.dist_timeout_s)),
        max_epochs=cfg.epochs,
        callbacks=[LossSpikeGuard(cfg.spike_factor, cfg.spike_warmup_steps)],
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
        use_distributed_sampler=False,  # data are sharded by turbine already
    )


def main():
    cfg = load()
    pl.seed_everything(cfg.seed)
    scada = ScadaDataModule(cfg.hours_per_turbine, cfg.window, cfg.batch_size, cfg.seed)
    trainer = build_trainer(cfg)
    trainer.fit(PowerForecaster(cfg.window, cfg.lr), datamodule=scada)
    if trainer.is_global_zero:
        print(f"trained on {cfg.devices * cfg.num_nodes} turbines", flush=True)


if __name__ == "__main__":
    main()
