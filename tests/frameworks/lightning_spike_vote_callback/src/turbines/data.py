"""Wind-speed windows and the power a turbine produced after them, one turbine per rank.

Each turbine's SCADA export is its own file, so the data are sharded by turbine: every rank
reads the turbine numbered like its global rank (the Trainer runs with
use_distributed_sampler=False). Turbine 1's power sensor stuck at its ceiling for a while
(hours 40-47); nobody cleaned the export.
"""

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

STUCK = {1: (range(40, 48), 40.0)}  # turbine -> (hours, value the sensor reported)


def power_curve(wind: torch.Tensor) -> torch.Tensor:
    """Normalised power: cubic between cut-in (3 m/s) and rated (12 m/s), flat above."""
    x = ((wind - 3.0) / 9.0).clamp(0.0, 1.0)
    return x ** 3


class TurbineWindows(Dataset):
    def __init__(self, turbine: int, hours: int, window: int, seed: int):
        g = torch.Generator().manual_seed(seed * 1000 + turbine)
        base = 4.0 + 8.0 * torch.rand(hours, 1, generator=g)
        self.x = base + torch.randn(hours, window, generator=g)
        self.y = power_curve(self.x[:, -3:].mean(dim=1, keepdim=True))
        self.y += 0.02 * torch.randn(hours, 1, generator=g)
        stuck_hours, value = STUCK.get(turbine, ((), 0.0))
        for hour in stuck_hours:
            self.y[hour] = value

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class ScadaDataModule(pl.LightningDataModule):
    def __init__(self, hours: int, window: int, batch_size: int, seed: int):
        super().__init__()
        self.hours, self.window, self.batch_size, self.seed = hours, window, batch_size, seed

    def setup(self, stage: str):
        self.turbine = self.trainer.global_rank
        self.train_set = TurbineWindows(self.turbine, self.hours, self.window, self.seed)

    def train_dataloader(self):
        # hours in order: the model sees each turbine's season as it happened
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=False)
