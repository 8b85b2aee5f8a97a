# expect: DSY001 at line 17
"""Which `return` a method takes decides whether its result is `None`. Here the test is on
the rank's own slice: only the rank holding the first slice hands back the configured total,
the others return `None`, so the loss runs the validating all-reduce on those ranks alone.
(A test on whether the cache is set is quiet: quiet/shard_layout_resolved_once_per_instance.py.)"""
import torch
import torch.distributed as dist


def total_vocab_size(local_size, group):
    total = torch.tensor(local_size)
    dist.all_reduce(total, group=group)
    return int(total.item())


def cross_entropy(logits, target, group, total=None):
    if total is None:
        total = total_vocab_size(logits.shape[-1], group)
    invalid = (target < 0) | (target >= total)
    if invalid.any().item():
        raise ValueError(f"target out of range for vocabulary size {total}")
    local = torch.nn.functional.cross_entropy(logits, target % logits.shape[-1], reduction="sum")
    dist.all_reduce(local, group=group)
    return local


class VocabParallelLoss:
    def __init__(self, group, configured_total):
        self.group = group
        self._key = None
        self._total = configured_total

    def _resolve_once(self, local_size):
        start = dist.get_rank(self.group) * local_size
        if self._key is None:
            self._key = (start, start + local_size)
        if start == 0:
            return self._total
        return None

    def __call__(self, logits, target):
        total = self._resolve_once(logits.shape[-1])
        return cross_entropy(logits, target, self.group, total=total)
