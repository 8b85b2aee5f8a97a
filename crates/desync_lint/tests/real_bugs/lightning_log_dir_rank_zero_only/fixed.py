"""LightningModule that writes its config and sample images next to the logs.

Every process reads `self.trainer.log_dir` (a broadcast); only global rank 0 writes.
"""
import json
import os

import lightning.pytorch as pl
import torch


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

    def on_fit_start(self):
        log_dir = self.trainer.log_dir
        if self.trainer.is_global_zero:
            out = os.path.join(log_dir, "run_config.json")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w") as f:
                json.dump(dict(self.hparams), f)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    data = torch.utils.data.DataLoader(torch.randn(64, 32), batch_size=2)
    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp", max_epochs=1)
    trainer.fit(BoringModel(), data)
