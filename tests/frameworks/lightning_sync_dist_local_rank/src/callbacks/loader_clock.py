"""Measures the time between the end of one batch and the start of the next."""

import time

import pytorch_lightning as pl


class LoaderClock(pl.Callback):
    def __init__(self):
        self._last_end = None
        self._waits = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self._last_end is not None:
            self._waits.append(time.perf_counter() - self._last_end)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self._last_end = time.perf_counter()

    def mean_wait_ms(self) -> float:
        recent = self._waits[-20:] or [0.0]
        return 1000.0 * sum(recent) / len(recent)
