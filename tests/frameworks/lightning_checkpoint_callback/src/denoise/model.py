import torch
import torch.nn.functional as F
from torch import nn

import pytorch_lightning as pl


def psnr(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return 10 * torch.log10(1.0 / F.mse_loss(pred, target))


class Denoiser(pl.LightningModule):
    def __init__(self, lr: float):
        super().__init__()
        self.save_hyperparameters()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, noisy):
        return noisy - self.body(noisy)  # predict the noise, subtract it

    def training_step(self, batch, batch_idx):
        noisy, clean = batch
        loss = F.mse_loss(self(noisy), clean)
        self.log("train/mse", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        noisy, clean = batch
        self.log("val/psnr", psnr(self(noisy), clean), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
