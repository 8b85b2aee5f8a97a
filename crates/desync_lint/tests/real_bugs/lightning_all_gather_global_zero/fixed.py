"""LightningModule that collects test predictions from every GPU at the end of testing.

Every process calls `self.all_gather`; only the global-zero process writes the result.
"""
import pytorch_lightning as pl
import torch
import torch.nn.functional as F


class Classifier(pl.LightningModule):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.fc = torch.nn.Linear(dim_in, dim_out)
        self.test_outputs = []

    def forward(self, x):
        return self.fc(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.binary_cross_entropy_with_logits(self(x), y)

    def test_step(self, batch, batch_idx):
        x, _ = batch
        self.test_outputs.append(self(x).detach())

    def on_test_epoch_end(self):
        local = torch.cat(self.test_outputs)
        self.test_outputs.clear()
        gathered = self.all_gather(local)
        if self.trainer.is_global_zero:
            print(f"gathered predictions: {tuple(gathered.shape)}")
            torch.save(gathered.cpu(), "predictions.pt")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


if __name__ == "__main__":
    x, y = torch.rand(64, 5), torch.rand(64, 3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)
    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp", max_epochs=1)
    model = Classifier(5, 3)
    trainer.fit(model, loader)
    trainer.test(model, loader)
