import pytorch_lightning as pl
from torch.utils.data import DataLoader

from churn.features import customer_table


class ChurnData(pl.LightningDataModule):
    def __init__(self, customers: int, holdout: int, batch_size: int, seed: int):
        super().__init__()
        self.customers, self.holdout = customers, holdout
        self.batch_size, self.seed = batch_size, seed

    def setup(self, stage=None):
        self.train = customer_table(self.customers, self.seed)
        self.valid = customer_table(self.holdout, self.seed + 100)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.valid, batch_size=self.batch_size)
