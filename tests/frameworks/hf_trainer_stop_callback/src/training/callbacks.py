"""Guards that end a run early instead of burning compute on a broken one."""

import math

from transformers import TrainerCallback


class NonFiniteLossGuard(TrainerCallback):
    """Stop training once the loss has been NaN/inf for `patience` steps in a row,
    so the last good checkpoint is not overwritten by a diverged model."""

    def __init__(self, loss_watch, patience: int = 1):
        self.loss_watch = loss_watch
        self.patience = patience
        self.bad_steps = 0

    def on_step_end(self, args, state, control, **kwargs):
        loss = self.loss_watch.last()
        if loss is not None and not math.isfinite(loss):
            self.bad_steps += 1
        else:
            self.bad_steps = 0
        if self.bad_steps >= self.patience:
            print(f"rank {args.process_index}: non-finite loss for {self.bad_steps} step(s) "
                  f"at step {state.global_step}, stopping", flush=True)
            control.should_training_stop = True
        return control
