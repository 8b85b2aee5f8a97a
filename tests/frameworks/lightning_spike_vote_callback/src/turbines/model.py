import torch
import torch.nn.functional as F
from torch import nn

import pytorch_lightning as pl


class PowerForecaster(pl.LightningModule):
    def __init__(self, window: int, lr: float):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(window, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(),
                                 nn.Linear(32, 1))

    def forward(self, wind):
        return self.net((wind - 8.0) / 4.0)

    def training_step(self, batch, batch_idx):
        wind, power = batch
        loss = F.mse_loss(self(wind), power)
        self.log("train/mse", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
