"""Blurry blobs on a dark background, with and without sensor noise."""

import torch
from torch.utils.data import Dataset


class NoisyBlobs(Dataset):
    def __init__(self, count: int, size: int, noise: float, seed: int):
        g = torch.Generator().manual_seed(seed)
        yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        centers = torch.rand(count, 2, generator=g) * size
        dist2 = (yy[None] - centers[:, 0, None, None]) ** 2 + (xx[None] - centers[:, 1, None, None]) ** 2
        self.clean = torch.exp(-dist2 / 4.0).unsqueeze(1)
        self.noisy = self.clean + noise * torch.randn(self.clean.shape, generator=g)

    def __len__(self):
        return len(self.clean)

    def __getitem__(self, i):
        return self.noisy[i], self.clean[i]
