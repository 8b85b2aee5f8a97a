from torch import nn

from kws.features import FRAMES, KEYWORDS, MELS


class KeywordNet(nn.Module):
    def __init__(self, hidden: int = 48):
        super().__init__()
        self.conv = nn.Conv1d(MELS, hidden, kernel_size=3, padding=1)
        self.head = nn.Linear(hidden * FRAMES, KEYWORDS)

    def forward(self, spectra):
        return self.head(self.conv(spectra).relu().flatten(1))
