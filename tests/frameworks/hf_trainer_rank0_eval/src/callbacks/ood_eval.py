"""Out-of-domain tracking: how the classifier does on forum posts, once per epoch.

The number goes to the team dashboard, which only the main process writes to.
"""

from transformers import TrainerCallback


class OutOfDomainEval(TrainerCallback):
    def __init__(self, ood_dataset):
        self.ood_dataset = ood_dataset
        self.trainer = None
        self.history = []

    def attach(self, trainer):
        self.trainer = trainer

    def on_epoch_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            metrics = self.trainer.evaluate(eval_dataset=self.ood_dataset, metric_key_prefix="ood")
            self.history.append((state.global_step, metrics["ood_accuracy"]))
            print(f"dashboard: epoch {round(state.epoch)} ood accuracy {metrics['ood_accuracy']:.3f}",
                  flush=True)
        return control
