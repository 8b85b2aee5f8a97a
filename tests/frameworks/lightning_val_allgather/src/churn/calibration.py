"""Expected calibration error of churn probabilities."""

import torch


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, bins: int) -> float:
    edges = torch.linspace(0, 1, bins + 1)
    ece = torch.zeros(())
    for lo, hi in zip(edges[:-1], edges[1:]):
        in_bin = (probs > lo) & (probs <= hi)
        if in_bin.any():
            gap = (probs[in_bin].mean() - labels[in_bin].mean()).abs()
            ece += gap * in_bin.float().mean()
    return ece.item()
