from torch import nn


class DefectClassifier(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.GELU(),
                                  nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))
