import torch

from audio.model import EVENTS, FRAMES, MELS


def clip_batches(rank: int, batch_size: int, steps: int):
    g = torch.Generator().manual_seed(rank)
    for _ in range(steps):
        events = torch.randint(0, EVENTS, (batch_size,), generator=g)
        mel = torch.randn(batch_size, MELS, FRAMES, generator=g)
        mel[torch.arange(batch_size), events * 3] += 1.5
        yield mel, events
