"""The fixed callbacks: the model is saved on every process (the Trainer's `save_model` writes
files on the main process only), and the main process alone does what is its own: the upload,
the log line."""
import tempfile

from transformers import Trainer, TrainerCallback


class ArtifactLogger(TrainerCallback):
    def __init__(self, tracker):
        self.tracker = tracker

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        exporter = Trainer(args=args, model=model, processing_class=processing_class)
        with tempfile.TemporaryDirectory() as temp_dir:
            exporter.save_model(temp_dir)
            if state.is_world_process_zero:
                self.tracker.upload(temp_dir, name=f"model-{state.global_step}")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            print({k: round(v, 4) for k, v in logs.items() if isinstance(v, float)})
