"""A vocabulary-parallel loss resolves its shard layout once per instance and caches it. The
cache key holds this rank's slice (it differs by rank), but which `return` the method takes
depends only on whether the key is set yet, `None` or a tuple, which is the same on every
rank: every rank hands the loss a total, and no rank runs the validating all-reduce alone."""
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
    def __init__(self, group):
        self.group = group
        self._key = None
        self._total = None

    def _resolve_once(self, local_size):
        if self._key is None:
            rank = dist.get_rank(self.group)
            start = rank * local_size
            self._total = total_vocab_size(local_size, self.group)
            self._key = (start, start + local_size)
            return self._total
        if self._key[1] - self._key[0] != local_size:
            raise RuntimeError("the shard changed after the first call")
        return self._total

    def __call__(self, logits, target):
        total = self._resolve_once(logits.shape[-1])
        return cross_entropy(logits, target, self.group, total=total)
