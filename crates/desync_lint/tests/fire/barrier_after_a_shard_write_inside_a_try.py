# expect: DSY003 at line 25
"""The same cache, but the `try` first writes the rank's own shard: a rank whose write fails
(a full disk) swallows the error and skips the barrier its peers wait at."""
import logging

import torch.distributed as dist
from accelerate import Accelerator

logger = logging.getLogger(__name__)


class ResultCache:
    def __init__(self):
        self.accelerator = Accelerator()
        self.rows = []

    def flush(self, path):
        try:
            with open(f"{path}.{dist.get_rank()}", "a") as f:
                f.writelines(self.rows)
            if dist.is_available() and dist.is_initialized():
                dist.barrier()
            else:
                self.accelerator.wait_for_everyone()
        except Exception as err:
            logger.warning("cache sync failed: %s", err)
