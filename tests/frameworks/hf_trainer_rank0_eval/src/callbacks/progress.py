"""Per-rank progress lines for the job log."""

from transformers import TrainerCallback


class EpochProgress(TrainerCallback):
    def on_epoch_begin(self, args, state, control, **kwargs):
        print(f"rank {args.process_index}: epoch {round(state.epoch or 0) + 1} begins at step "
              f"{state.global_step}", flush=True)
