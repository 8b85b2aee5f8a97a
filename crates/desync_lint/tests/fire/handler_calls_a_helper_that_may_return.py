# expect: DSY003 at line 22
"""The handler calls a helper that ends the process only for some errors: for the others it
logs and returns, and the rank that failed goes on without the all-reduce its peers wait in."""
import logging
import sys

import torch.distributed as dist

log = logging.getLogger(__name__)


def report(err):
    log.error("step failed: %s", err)
    if isinstance(err, MemoryError):
        sys.exit(1)


def step(model, batch):
    try:
        loss = model(batch)
        dist.all_reduce(loss)
    except RuntimeError as err:
        report(err)
    return None
