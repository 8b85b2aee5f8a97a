"""torchrun --nproc-per-node 4 train.py --epochs 3"""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy
from torch.utils.data import DataLoader

from callbacks.snapshot import BestSnapshot
from config import load
from denoise.images import NoisyBlobs
from denoise.model import Denoiser


def build_trainer(cfg):
    return pl.Trainer(
        accelerator="cpu", devices=cfg.devices, num_nodes=cfg.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=cfg.dist_timeout_s)),
        max_epochs=cfg.epochs,
        callbacks=[BestSnapshot(cfg.snapshot_path)],
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0,
    )


def main():
    cfg = load()
    pl.seed_everything(cfg.seed)
    train = NoisyBlobs(cfg.images, cfg.image_size, cfg.noise, cfg.seed)
    val = NoisyBlobs(cfg.val_images, cfg.image_size, cfg.noise, cfg.seed + 1)
    trainer = build_trainer(cfg)
    trainer.fit(Denoiser(cfg.lr),
                train_dataloaders=DataLoader(train, batch_size=cfg.batch_size, shuffle=True),
                val_dataloaders=DataLoader(val, batch_size=cfg.batch_size))


if __name__ == "__main__":
    main()
