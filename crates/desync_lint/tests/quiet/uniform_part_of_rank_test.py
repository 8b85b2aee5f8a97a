"""Multi-process logging helper: without `in_order`, only the main process logs; with it,
every process logs in turn, separated by barriers. The rank decides the first clause only
where `not in_order` holds, and there no process enters the `elif in_order:` clause."""
import torch.distributed as dist


class RankLogger:
    def __init__(self, logger):
        self.logger = logger

    def should_log(self, main_process_only):
        return not main_process_only or dist.get_rank() == 0

    def log(self, msg, main_process_only=True, in_order=False):
        if not in_order and self.should_log(main_process_only):
            self.logger.info(msg)
        elif in_order:
            for i in range(dist.get_world_size()):
                if i == dist.get_rank():
                    self.logger.info(msg)
                dist.barrier()
