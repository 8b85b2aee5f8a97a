"""Loss and accuracy accumulated over an epoch and summed over all ranks."""

import torch
import torch.distributed as dist


class EpochMetrics:
    def __init__(self):
        self.totals = torch.zeros(3)  # loss sum, correct, samples

    def update(self, loss: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> None:
        n = labels.numel()
        self.totals += torch.tensor([loss.item() * n, (logits.argmax(1) == labels).sum().item(), n])

    def summarize(self) -> dict:
        totals = self.totals.clone()
        dist.all_reduce(totals)
        loss_sum, correct, samples = totals.tolist()
        return {"loss": loss_sum / samples, "accuracy": correct / samples, "samples": int(samples)}
