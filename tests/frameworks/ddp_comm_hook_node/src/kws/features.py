"""Synthetic log-mel frames for a keyword-spotting model."""

import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

MELS, FRAMES, KEYWORDS = 20, 16, 6


def keyword_loader(clips: int, batch_size: int, seed: int) -> DataLoader:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, KEYWORDS, (clips,), generator=g)
    spectra = torch.randn(clips, MELS, FRAMES, generator=g)
    spectra[torch.arange(clips), labels * 3] += 2.0  # each keyword lights up one band
    dataset = TensorDataset(spectra, labels)
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset, seed=seed))
