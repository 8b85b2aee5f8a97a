"""Synthetic demand data: each store's history is a noisy linear signal."""

import torch
from torch.utils.data import DataLoader, TensorDataset

import pytorch_lightning as pl

FEATURES = 12


def make_split(rows: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, FEATURES, generator=g)
    w = torch.linspace(-1.0, 1.0, FEATURES)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(rows, 1, generator=g)
    return TensorDataset(x, y)


class DemandDataModule(pl.LightningDataModule):
    def __init__(self, train_rows: int, val_rows: int, batch_size: int, seed: int):
        super().__init__()
        self.train_rows, self.val_rows = train_rows, val_rows
        self.batch_size, self.seed = batch_size, seed

    def setup(self, stage=None):
        self.train_set = make_split(self.train_rows, self.seed)
        self.val_set = make_split(self.val_rows, self.seed + 1)

    def train_dataloader(self):
        # Lightning wraps these in a DistributedSampler: every rank gets len/world rows.
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)
