# expect: DSY001 at line 16
"""The `elif` is not the opposite of the first test's rank-independent part: with `verbose`
and `in_order` both false, rank 0 logs in the first clause while the others enter the
`elif` and wait in its barrier."""
import torch.distributed as dist


class RankLogger:
    def __init__(self, logger):
        self.logger = logger

    def should_log(self, main_process_only):
        return not main_process_only or dist.get_rank() == 0

    def log(self, msg, main_process_only=True, in_order=False, verbose=False):
        if not verbose and self.should_log(main_process_only):
            self.logger.info(msg)
        elif not in_order:
            for i in range(dist.get_world_size()):
                if i == dist.get_rank():
                    self.logger.info(msg)
                dist.barrier()
