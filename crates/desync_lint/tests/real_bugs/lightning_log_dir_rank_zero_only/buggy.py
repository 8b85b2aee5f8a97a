"""LightningModule that writes its config and sample images next to the logs.

`on_fit_start` is decorated with `rank_zero_only` so the files are written once. It reads
`self.trainer.log_dir`, and that property broadcasts the directory from rank 0 to all
processes: rank 0 is then in a broadcast the others never issue, and the run freezes after
the first step (the others' first gradient all_reduce meets rank 0's broadcast).
"""
import json
import os

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities import rank_zero_only


class BoringModel(pl.LightningModule):
    def __init__(self, hidden=32, lr=0.1):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(hidden, 2)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        loss = torch.nn.functional.mse_loss(self(batch), torch.ones(len(batch), 2, device=self.device))
        self.log("train_loss", loss)
        return loss

    @rank_zero_only  # BUG: the body reads trainer.log_dir, a broadcast, on rank 0 only
    def on_fit_start(self):
        out = os.path.join(self.trainer.log_dir, "run_config.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(dict(self.hparams), f)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    data = torch.utils.data.DataLoader(torch.randn(64, 32), batch_size=2)
    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp", max_epochs=1)
    trainer.fit(BoringModel(), data)
