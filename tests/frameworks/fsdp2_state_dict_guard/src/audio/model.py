"""1-D convolutional event classifier over log-mel frames."""

from torch import nn

MELS, FRAMES, EVENTS = 16, 24, 5


class ConvStage(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel_size=3, padding=1)
        self.norm = nn.BatchNorm1d(cout)

    def forward(self, x):
        return self.norm(self.conv(x)).relu()


class EventClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([ConvStage(MELS, 24), ConvStage(24, 24)])
        self.head = nn.Linear(24, EVENTS)

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return self.head(x.mean(-1))
