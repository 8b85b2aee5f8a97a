"""GRPO loss restricted to high-entropy tokens (top entropy quantile), Accelerate multi-GPU.

The non-padding entropies are padded to a common length with a NaN sentinel before the
gather, and the sentinel is dropped afterwards, so every process sends the same shape.
"""
import torch
from accelerate import Accelerator


class GRPOTrainer:
    def __init__(self, model, args):
        self.model = model
        self.args = args
        self.accelerator = Accelerator()

    def get_high_entropy_mask(self, entropies, mask, threshold_q):
        non_pad_entropies = entropies[mask.bool()].float()
        padded = self.accelerator.pad_across_processes(non_pad_entropies, dim=0, pad_index=float("nan"))
        all_entropies = self.accelerator.gather(padded)
        all_entropies = all_entropies[~torch.isnan(all_entropies)]
        threshold = torch.quantile(all_entropies, threshold_q)
        return (entropies >= threshold) & mask.bool()

    def compute_loss(self, inputs):
        logits = self.model(inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
        logps = torch.log_softmax(logits, dim=-1)
        entropies = -(logps.exp() * logps).sum(-1)
        completion_mask = inputs["completion_mask"]
        if self.args.top_entropy_quantile < 1.0:
            completion_mask = self.get_high_entropy_mask(entropies, completion_mask, 1 - self.args.top_entropy_quantile)
        per_token = -inputs["advantages"].unsqueeze(1) * logps.gather(-1, inputs["labels"].unsqueeze(-1)).squeeze(-1)
        return (per_token * completion_mask).sum() / completion_mask.sum().clamp(min=1)
