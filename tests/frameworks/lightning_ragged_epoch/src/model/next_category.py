import torch
import torch.nn.functional as F
from torch import nn

import pytorch_lightning as pl


class NextCategory(pl.LightningModule):
    def __init__(self, categories: int, history: int, embed_dim: int, lr: float):
        super().__init__()
        self.save_hyperparameters()
        self.embed = nn.Embedding(categories, embed_dim)
        self.mix = nn.Linear(history * embed_dim, embed_dim)
        self.out = nn.Linear(embed_dim, categories)

    def forward(self, history):
        return self.out(torch.relu(self.mix(self.embed(history).flatten(1))))

    def training_step(self, batch, batch_idx):
        history, target = batch
        loss = F.cross_entropy(self(history), target)
        self.log("train/ce", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
