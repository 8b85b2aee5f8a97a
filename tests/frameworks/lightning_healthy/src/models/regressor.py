"""The demand regressor: a small MLP trained with MSE, evaluated with MAE."""

import torch
import torch.nn.functional as F
from torch import nn

import pytorch_lightning as pl


class DemandRegressor(pl.LightningModule):
    def __init__(self, features: int, hidden: int, lr: float):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )
        self._val_errors = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train/loss", loss, on_step=True, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        self._val_errors.append((pred - y).abs().detach())
        self.log("val/mse", F.mse_loss(pred, y), on_epoch=True, sync_dist=True)

    def on_validation_epoch_end(self):
        errors = torch.cat(self._val_errors)
        self._val_errors.clear()
        # Every rank contributes its errors; the gathered tensor is (world, rows, 1).
        gathered = self.all_gather(errors)
        self.log("val/mae", gathered.mean(), rank_zero_only=True)
        if self.trainer.is_global_zero:
            print(f"epoch {self.current_epoch}: val/mae {gathered.mean().item():.4f} "
                  f"over {gathered.numel()} rows", flush=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
