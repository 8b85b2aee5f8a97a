from torch import nn


def encoder(inputs: int, hidden: int, code: int) -> nn.Module:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, code))


class Autoencoder(nn.Module):
    """Stage 1: reconstruct the window through a small code."""

    def __init__(self, inputs: int, hidden: int, code: int):
        super().__init__()
        self.encoder = encoder(inputs, hidden, code)
        self.decoder = nn.Sequential(nn.Linear(code, hidden), nn.ReLU(), nn.Linear(hidden, inputs))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class FaultClassifier(nn.Module):
    """Stage 2: the pretrained encoder and a fault head."""

    def __init__(self, inputs: int, hidden: int, code: int, faults: int):
        super().__init__()
        self.encoder = encoder(inputs, hidden, code)
        self.head = nn.Linear(code, faults)

    def forward(self, x):
        return self.head(self.encoder(x).relu())
