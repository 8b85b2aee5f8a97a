"""A dense autoencoder whose reconstruction error scores a vibration window."""

import torch
import torch.nn.functional as F
from torch import nn

import pytorch_lightning as pl


class WindowAutoencoder(pl.LightningModule):
    def __init__(self, window_len: int, bottleneck: int, lr: float, host_report_every: int,
                 loader_clock=None):
        super().__init__()
        self.save_hyperparameters(ignore=["loader_clock"])
        self.encoder = nn.Sequential(nn.Linear(window_len, 16), nn.ReLU(), nn.Linear(16, bottleneck))
        self.decoder = nn.Sequential(nn.Linear(bottleneck, 16), nn.ReLU(), nn.Linear(16, window_len))
        self.loader_clock = loader_clock

    def forward(self, x):
        return self.decoder(self.encoder(x))

    def training_step(self, batch, batch_idx):
        (x,) = batch
        loss = F.mse_loss(self(x), x)
        self.log("train/recon", loss)
        if self.local_rank == 0 and (batch_idx + 1) % self.hparams.host_report_every == 0:
            # One process per host reports how long the host's loader kept it waiting.
            self.log("host/loader_wait_ms", self.loader_clock.mean_wait_ms(), sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
