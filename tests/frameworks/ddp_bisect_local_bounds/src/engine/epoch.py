"""One epoch of training, then the alert threshold for the epoch's report."""

import torch.nn.functional as F

from calibration.threshold import global_threshold
from data.regions import batch, risk_scores


def train_epoch(model, optimizer, g, rank, args):
    for _ in range(args.steps_per_epoch):
        x, y = batch(g, args.features)
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return global_threshold(risk_scores(rank, args.seed), args.alert_rate, args.tolerance)
