"""Launched on each host with `torchrun --nnodes 2 --nproc-per-node 4 train.py`."""

from datetime import timedelta

import pytorch_lightning as pl
from pytorch_lightning.strategies import DDPStrategy
from torch.utils.data import DataLoader

import settings
from anomaly.autoencoder import WindowAutoencoder
from anomaly.signals import vibration_windows
from callbacks.loader_clock import LoaderClock


def main():
    args = settings.parse()
    pl.seed_everything(args.seed)
    clock = LoaderClock()
    model = WindowAutoencoder(args.window_len, args.bottleneck, args.lr,
                              args.host_report_every, loader_clock=clock)
    train = DataLoader(vibration_windows(args.windows, args.window_len, args.seed),
                       batch_size=args.batch_size, shuffle=True)
    trainer = pl.Trainer(
        accelerator="cpu", devices=args.devices, num_nodes=args.num_nodes,
        strategy=DDPStrategy(process_group_backend="gloo",
                             timeout=timedelta(seconds=args.dist_timeout_s)),
        max_epochs=args.epochs, callbacks=[clock], logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(model, train_dataloaders=train)


if __name__ == "__main__":
    main()
