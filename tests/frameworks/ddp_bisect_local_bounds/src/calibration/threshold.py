"""Alert threshold: the score above which the global alert rate equals the target.

Bisection on the threshold; every probe counts the alerts on all ranks.
"""

import torch
import torch.distributed as dist


def global_threshold(scores: torch.Tensor, target_rate: float, tol: float) -> float:
    lo, hi = scores.min().item(), scores.max().item()
    while hi - lo > tol:
        mid = (lo + hi) / 2
        counts = torch.tensor([(scores > mid).sum().item(), float(len(scores))])
        dist.all_reduce(counts)
        if counts[0] / counts[1] > target_rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
