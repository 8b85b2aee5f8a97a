"""Holdout metrics over all processes."""

import torch


@torch.no_grad()
def holdout_mape(accelerator, model, series, targets, batch_size: int) -> float:
    model.eval()
    errors = []
    for start in range(0, len(series), batch_size):
        preds = model(series[start:start + batch_size])
        truth = targets[start:start + batch_size]
        preds, truth = accelerator.gather_for_metrics((preds, truth))
        errors.append(((preds - truth).abs() / truth.abs()).flatten())
    model.train()
    return torch.cat(errors).mean().item()
