"""Callbacks the trainer calls after each optimizer step."""

import time


class ThroughputMeter:
    def __init__(self):
        self.started = time.perf_counter()

    def on_step_end(self, trainer):
        if trainer.global_step % 20 == 0:
            rate = trainer.global_step / (time.perf_counter() - self.started)
            print(f"rank {trainer.rank}: step {trainer.global_step}: {rate:.1f} steps/s", flush=True)


class ConvergenceStopper:
    """Ends training once the step loss has stayed under `target` for `patience` steps."""

    def __init__(self, target, patience):
        self.target = target
        self.patience = patience
        self.streak = 0

    def on_step_end(self, trainer):
        self.streak = self.streak + 1 if trainer.last_loss < self.target else 0
        if self.streak >= self.patience:
            print(f"rank {trainer.rank}: converged after step {trainer.global_step} "
                  f"(loss {trainer.last_loss:.4f} under {self.target} for {self.streak} steps), stopping",
                  flush=True)
            trainer.stop_requested = True
