import torch
import torch.distributed as dist


def pieces(values: torch.Tensor, size: int):
    """Bounded messages: the sync sends at most `size` readings' statistics at a time."""
    return list(torch.split(values, size))


def fleet_drift(readings: torch.Tensor, size: int) -> float:
    """Mean absolute drift over every site, reduced piece by piece."""
    total = torch.zeros(2)
    for piece in pieces(readings, size):
        stats = torch.stack([piece.abs().sum(), torch.tensor(float(piece.numel()))])
        dist.all_reduce(stats)
        total += stats
    return float(total[0] / total[1])
