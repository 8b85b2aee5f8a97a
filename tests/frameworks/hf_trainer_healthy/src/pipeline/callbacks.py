"""Progress reporting for the CI dashboard."""

import math

from transformers import TrainerCallback


class PerplexityReporter(TrainerCallback):
    """Print eval perplexity from the main process (metrics are already gathered)."""

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if state.is_world_process_zero and metrics and "eval_loss" in metrics:
            print(f"step {state.global_step}: eval perplexity {math.exp(metrics['eval_loss']):.2f}",
                  flush=True)


class EpochMarker(TrainerCallback):
    def on_epoch_end(self, args, state, control, **kwargs):
        print(f"rank {args.process_index}: epoch {round(state.epoch)} done at step {state.global_step}",
              flush=True)
