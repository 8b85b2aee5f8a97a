"""Pose-estimation training with a CSV-logging callback, Lightning DDP.

Every rank reads `trainer.callback_metrics` (which may all_reduce `sync_dist=True`
metrics); only global rank 0 writes the row.
"""
import csv
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback


class CSVLoggerCallback(Callback):
    def __init__(self, path, keys=("val_loss", "val_oks")):
        self.path = Path(path)
        self.keys = keys

    def on_validation_epoch_end(self, trainer, pl_module):
        metrics = trainer.callback_metrics
        if trainer.is_global_zero:
            row = {"epoch": trainer.current_epoch}
            row.update({k: float(metrics[k]) for k in self.keys if k in metrics})
            new = not self.path.exists()
            with self.path.open("a", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=["epoch", *self.keys])
                if new:
                    writer.writeheader()
                writer.writerow(row)


class PoseModel(L.LightningModule):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone, self.head = backbone, head

    def validation_step(self, batch, batch_idx):
        heatmaps = self.head(self.backbone(batch["image"]))
        loss = torch.nn.functional.mse_loss(heatmaps, batch["confmaps"])
        self.log("val_loss", loss, on_epoch=True, sync_dist=True)
        self.log("val_oks", batch["oks"].mean(), on_epoch=True, sync_dist=True)

    def training_step(self, batch, batch_idx):
        loss = torch.nn.functional.mse_loss(self.head(self.backbone(batch["image"])), batch["confmaps"])
        self.log("train_loss", loss, sync_dist=False)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def main(backbone, head, datamodule, out_dir):
    trainer = L.Trainer(devices=2, strategy="ddp", max_epochs=100, callbacks=[CSVLoggerCallback(Path(out_dir) / "metrics.csv")])
    trainer.fit(PoseModel(backbone, head), datamodule=datamodule)
