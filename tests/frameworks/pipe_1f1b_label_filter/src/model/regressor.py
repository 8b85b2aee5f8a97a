import torch
from torch import nn


def build_stage_module(stage: int, features: int, hidden: int) -> nn.Module:
    """The regressor cut in two: an encoder on stage 0, the head on stage 1."""
    torch.manual_seed(1234 + stage)  # replicas of a stage start identical
    if stage == 0:
        return nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Linear(hidden, hidden),
                             nn.GELU())
    return nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1))
