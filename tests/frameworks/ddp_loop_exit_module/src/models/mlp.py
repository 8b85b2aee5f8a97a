from torch import nn


def tariff_classifier(features: int, classes: int) -> nn.Module:
    return nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(),
                         nn.Linear(32, classes))
