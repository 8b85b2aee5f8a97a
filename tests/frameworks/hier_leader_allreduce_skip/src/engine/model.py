import torch
from torch import nn


class AnomalyNet(nn.Module):
    def __init__(self, channels: int, window: int, hidden: int):
        super().__init__()
        self.conv = nn.Conv1d(channels, hidden, kernel_size=3, padding=1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(hidden * window, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x))).squeeze(-1)
