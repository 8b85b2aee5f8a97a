"""Stop training once the calibration error is below the instrument's tolerance."""

import pytorch_lightning as pl


class StopOnConvergence(pl.Callback):
    """Ends fit when the batch MSE stays under ``target`` for ``patience`` batches in a row."""

    def __init__(self, target: float, patience: int):
        self.target, self.patience = target, patience
        self.streak = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        mse = float(outputs["loss"])
        self.streak = self.streak + 1 if mse < self.target else 0
        if self.streak >= self.patience:
            print(f"rank {trainer.global_rank}: converged at step {trainer.global_step} "
                  f"(epoch {trainer.current_epoch} batch {batch_idx}, mse {mse:.4f})", flush=True)
            trainer.should_stop = True
