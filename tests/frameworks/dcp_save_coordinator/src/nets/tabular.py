from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.fc(x).relu()


class TabularNet(nn.Module):
    def __init__(self, features: int = 24, dim: int = 32, classes: int = 3):
        super().__init__()
        self.inp = nn.Linear(features, dim)
        self.blocks = nn.ModuleList(ResidualBlock(dim) for _ in range(2))
        self.out = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)
