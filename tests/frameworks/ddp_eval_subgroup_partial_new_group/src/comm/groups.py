"""Process groups the trainer needs beyond the default one, created on first use."""

import torch.distributed as dist

_GROUPS: dict = {}


def eval_group(n_eval: int):
    """The ranks that score the holdout set."""
    if "eval" not in _GROUPS:
        _GROUPS["eval"] = dist.new_group(ranks=list(range(n_eval)))
    return _GROUPS["eval"]


def object_group():
    """A Gloo group for pickled objects (run summaries), whatever the training backend."""
    if "objects" not in _GROUPS:
        _GROUPS["objects"] = dist.new_group(backend="gloo")
    return _GROUPS["objects"]
