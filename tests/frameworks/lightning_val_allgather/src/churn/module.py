"""LightningModule for churn prediction with a calibration report after each validation."""

import torch
import torch.nn.functional as F
from torch import nn

import pytorch_lightning as pl

from churn.calibration import expected_calibration_error
from churn.features import N_FEATURES


class ChurnModule(pl.LightningModule):
    def __init__(self, hidden: int, lr: float, calibration_bins: int):
        super().__init__()
        self.save_hyperparameters()
        self.classifier = nn.Sequential(nn.Linear(N_FEATURES, hidden), nn.GELU(),
                                        nn.Linear(hidden, 1))
        self._probs, self._labels = [], []

    def training_step(self, batch, batch_idx):
        features, churned = batch
        loss = F.binary_cross_entropy_with_logits(self.classifier(features), churned)
        self.log("train/bce", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        features, churned = batch
        logits = self.classifier(features)
        self.log("val/bce", F.binary_cross_entropy_with_logits(logits, churned), sync_dist=True)
        self._probs.append(torch.sigmoid(logits).detach())
        self._labels.append(churned)

    def on_validation_epoch_end(self):
        probs, labels = torch.cat(self._probs), torch.cat(self._labels)
        self._probs.clear()
        self._labels.clear()
        if self.trainer.is_global_zero:
            # The calibration report needs every rank's holdout scores.
            scored = self.all_gather(torch.cat([probs, labels], dim=1)).reshape(-1, 2)
            ece = expected_calibration_error(scored[:, 0], scored[:, 1],
                                             self.hparams.calibration_bins)
            print(f"epoch {self.current_epoch}: holdout ECE {ece:.4f} "
                  f"over {len(scored)} customers", flush=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
