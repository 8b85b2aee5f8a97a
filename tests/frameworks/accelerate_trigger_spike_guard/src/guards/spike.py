"""Loss-spike guard: stop the run on every process when the loss explodes.

Accelerate's trigger is the documented way to stop all processes together: one process sets
it, `check_trigger()` all-reduces it so every process sees the same answer.
"""


class SpikeGuard:
    def __init__(self, accelerator, factor: float, warmup_steps: int):
        self.accelerator = accelerator
        self.factor = factor
        self.warmup_steps = warmup_steps
        self.ema = None
        self.seen = 0

    def update(self, loss_value: float) -> bool:
        """True when the run must stop."""
        self.seen += 1
        if self.ema is not None and self.seen > self.warmup_steps and loss_value > self.factor * self.ema:
            print(f"[process {self.accelerator.process_index}] loss spike at step {self.seen}: "
                  f"{loss_value:.1f} vs {self.ema:.4f}, stopping", flush=True)
            self.accelerator.set_trigger()
            return self.accelerator.check_trigger()
        self.ema = loss_value if self.ema is None else 0.9 * self.ema + 0.1 * loss_value
        return False
