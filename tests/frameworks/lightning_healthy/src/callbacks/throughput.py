"""Samples per second, averaged over the ranks at the end of each training epoch."""

import time

import torch

import pytorch_lightning as pl


class ThroughputMonitor(pl.Callback):
    def on_train_epoch_start(self, trainer, pl_module):
        self._start = time.perf_counter()
        self._samples = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._samples += batch[0].shape[0]

    def on_train_epoch_end(self, trainer, pl_module):
        rate = torch.tensor(self._samples / (time.perf_counter() - self._start))
        mean_rate = trainer.strategy.reduce(rate, reduce_op="mean")
        if trainer.is_global_zero:
            print(f"epoch {trainer.current_epoch}: {mean_rate.item():.0f} samples/s per rank",
                  flush=True)
