"""The handlers call project helpers that never return: one ends the process after logging,
the other raises the project's own error from the one caught. A rank that fails dies loudly
(torchrun stops its peers); none goes on past a collective the others wait in."""
import logging
import sys

import torch.distributed as dist

log = logging.getLogger(__name__)


class TrainingError(RuntimeError):
    pass


def fatal(message):
    log.error(message)
    sys.exit(1)


def fail(err):
    if isinstance(err, TimeoutError):
        raise TrainingError("a peer timed out") from err
    raise TrainingError(str(err)) from err


def step(model, batch):
    try:
        loss = model(batch)
        dist.all_reduce(loss)
    except RuntimeError as err:
        fatal(f"step failed: {err}")
    return loss


def evaluate(model, batch):
    try:
        metric = model.evaluate(batch)
        dist.all_reduce(metric)
    except ValueError as err:
        fail(err)
    return metric
