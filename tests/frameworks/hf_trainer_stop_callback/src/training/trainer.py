"""Trainer that keeps this process's recent per-step losses for the guards."""

from collections import deque

from transformers import Trainer


class LossWatch:
    def __init__(self, maxlen: int = 16):
        self.recent = deque(maxlen=maxlen)

    def record(self, value: float):
        self.recent.append(value)

    def last(self):
        return self.recent[-1] if self.recent else None


class HelpfulnessTrainer(Trainer):
    def __init__(self, *args, loss_watch: LossWatch, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_watch = loss_watch

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.loss_watch.record(loss.detach().item())
        return loss
