"""Backs the learning rate off on every rank when the training loss spikes.

A spike is a step whose loss exceeds `factor` times the running average. The ranks vote
so that all of them scale the learning rate together and the replicas stay identical.
"""

import pytorch_lightning as pl

from utils.consensus import any_rank


class LossSpikeGuard(pl.Callback):
    def __init__(self, factor: float = 4.0, warmup_steps: int = 3, decay: float = 0.9,
                 backoff: float = 0.5):
        self.factor = factor
        self.warmup_steps = warmup_steps
        self.decay = decay
        self.backoff = backoff
        self.ema = None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        loss = float(outputs["loss"])
        spiked = self.ema is not None and loss > self.factor * self.ema
        if spiked and trainer.global_step > self.warmup_steps:
            print(f"rank {trainer.global_rank}: loss spike at step {trainer.global_step}: "
                  f"{loss:.2f} > {self.factor} x {self.ema:.4f}", flush=True)
            if any_rank(trainer, True):
                for group in trainer.optimizers[0].param_groups:
                    group["lr"] *= self.backoff
                print(f"rank {trainer.global_rank}: learning rate backed off", flush=True)
            return  # keep the spike out of the running average
        self.ema = loss if self.ema is None else self.decay * self.ema + (1 - self.decay) * loss
