# expect: DSY001 at line 24
# expect: DSY001 at line 39
"""Hugging Face Trainer callbacks that save or evaluate on the main process only. The Trainer
calls every callback event as `event(args, state, control, **kwargs)` on every process, and
`state.is_world_process_zero` is true on one of them; `Trainer.save_model` gathers the full
state dict under FSDP and DeepSpeed ZeRO-3, so the other processes never join it (the shape of
transformers#31338, a model logged at the end of training through a throwaway Trainer)."""
import os
import tempfile

from transformers import Trainer, TrainerCallback


class ArtifactLogger(TrainerCallback):
    """Uploads the final model to an experiment tracker."""

    def __init__(self, tracker, log_model=True):
        self.tracker = tracker
        self.log_model = log_model

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if not self.log_model:
            return
        if state.is_world_process_zero:
            exporter = Trainer(args=args, model=model, processing_class=processing_class)
            with tempfile.TemporaryDirectory() as temp_dir:
                exporter.save_model(temp_dir)
                self.tracker.upload(temp_dir, name=f"model-{state.global_step}")


class BestCheckpointCopier(TrainerCallback):
    """Keeps a copy of the best checkpoint next to the run, on the node that writes logs."""

    def __init__(self, trainer, out_dir):
        self.trainer = trainer
        self.out_dir = out_dir

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if state.is_local_process_zero and metrics and metrics.get("eval_loss", 1.0) < 0.5:
            exporter = Trainer(args=args, model=kwargs.get("model"))
            exporter.save_model(os.path.join(self.out_dir, "best"))
