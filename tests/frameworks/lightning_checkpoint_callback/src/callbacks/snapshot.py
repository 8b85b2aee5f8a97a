"""Keeps one copy of the best model where the serving team picks it up."""

import pytorch_lightning as pl


class BestSnapshot(pl.Callback):
    def __init__(self, path: str, monitor: str = "val/psnr"):
        self.path = path
        self.monitor = monitor
        self.best = float("-inf")

    def on_validation_end(self, trainer, pl_module):
        score = trainer.callback_metrics.get(self.monitor)
        if trainer.is_global_zero and score is not None and float(score) > self.best:
            self.best = float(score)
            trainer.save_checkpoint(self.path)
            print(f"snapshot: {self.monitor}={self.best:.2f} dB -> {self.path}", flush=True)
