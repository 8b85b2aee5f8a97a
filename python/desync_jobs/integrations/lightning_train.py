"""The regression as a LightningModule, trained with DDP on CPU (Gloo) by Lightning's own
launcher, with desync's callback.

    python lightning_train.py --devices 2 --stall-rank 1
"""

import datetime

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.strategies import DDPStrategy
from regression import build_model, parser, shard_store
from torch.utils.data import DataLoader, Dataset

from desync.lightning import DesyncCallback


class Shard(Dataset):
    """One batch per step from this rank's own shard, in order (the rank is known once DDP has
    started; the trainer leaves sampling to the shard: `use_distributed_sampler=False`)."""

    def __init__(self, args):
        self.args = args
        self.store = shard_store(args)

    def __len__(self):
        return self.args.steps

    def __getitem__(self, index):
        import torch.distributed as dist

        return self.store.read(dist.get_rank(), index + 1)


class Regression(pl.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.model = build_model()
        self.lr = lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.model(x[0]), y[0])
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def main():
    p = parser(__doc__)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--dump-dir", default="desync-dumps")
    args = p.parse_args()
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=args.devices,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=datetime.timedelta(seconds=args.pg_timeout)),
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
        callbacks=[DesyncCallback(args.dump_dir)],
    )
    loader = DataLoader(Shard(args), batch_size=1, shuffle=False, num_workers=0)
    trainer.fit(Regression(args.lr), loader)


if __name__ == "__main__":
    main()
