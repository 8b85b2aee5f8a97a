"""A small calibration network: raw channel readings -> reference value."""

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn


class Calibrator(pl.LightningModule):
    def __init__(self, channels: int, lr: float):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(channels, 32), nn.Tanh(), nn.Linear(32, 1))
        self.skip = nn.Linear(channels, 1)

    def forward(self, raw: torch.Tensor) -> torch.Tensor:
        return self.skip(raw) + self.net(raw)

    def training_step(self, batch, batch_idx):
        raw, ref = batch
        loss = F.mse_loss(self(raw), ref)
        self.log("train_mse", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
