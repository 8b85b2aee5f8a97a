"""torchrun --nproc-per-node 4 train.py --export-dir exports/clicks-2024-05-02"""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy
from torch.utils.data import DataLoader

from config import parse
from data.clickstream import ClickstreamPart
from model.next_category import NextCategory


def main():
    cfg = parse()
    pl.seed_everything(cfg.seed)
    stream = ClickstreamPart(cfg.export_dir, cfg.categories, cfg.history, cfg.seed)
    trainer = pl.Trainer(
        accelerator="cpu", devices=cfg.devices, num_nodes=cfg.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=cfg.dist_timeout_s)),
        max_epochs=cfg.epochs, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )
    model = NextCategory(cfg.categories, cfg.history, cfg.embed_dim, cfg.lr)
    trainer.fit(model, train_dataloaders=DataLoader(stream, batch_size=cfg.batch_size))


if __name__ == "__main__":
    main()
