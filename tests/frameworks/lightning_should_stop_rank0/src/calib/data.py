"""Raw sensor readings and their reference values, one measurement site per rank.

Site 0 is the lab bench (reference instrument, no noise); the field sites record the same
physics through noisy reference meters.
"""

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

FIELD_NOISE = {0: 0.0, 1: 0.35, 2: 0.4, 3: 0.3}


def site_readings(site: int, n: int, channels: int, seed: int):
    g = torch.Generator().manual_seed(seed)  # the same calibration curve at every site
    gain = torch.randn(channels, generator=g)
    offset = torch.randn(1, generator=g)
    g.manual_seed(seed * 100 + site)
    raw = torch.randn(n, channels, generator=g)
    reference = raw @ gain + offset
    reference = reference + FIELD_NOISE.get(site % 4, 0.3) * torch.randn(n, generator=g)
    return raw, reference[:, None]


class SiteDataModule(pl.LightningDataModule):
    def __init__(self, readings: int, channels: int, batch_size: int, seed: int):
        super().__init__()
        self.readings, self.channels, self.batch_size, self.seed = readings, channels, batch_size, seed

    def setup(self, stage: str) -> None:
        site = self.trainer.global_rank
        raw, ref = site_readings(site, self.readings, self.channels, self.seed)
        self.train_set = TensorDataset(raw, ref)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=False, drop_last=True)
