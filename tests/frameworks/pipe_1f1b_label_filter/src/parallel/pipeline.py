import torch
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, Schedule1F1B


def mse(output, target):
    return F.mse_loss(output.squeeze(-1), target)


class SchedulePool:
    """One 1F1B schedule per microbatch count (the last batch of an epoch may be short)."""

    def __init__(self, module, topo, micro_size: int):
        self.stage = PipelineStage(module, stage_index=topo.stage, num_stages=topo.num_stages,
                                   device=torch.device("cpu"), group=topo.pp_group)
        self.micro_size = micro_size
        self.schedules = {}

    def microbatches(self, rows: int) -> int:
        return max(1, rows // self.micro_size)

    def get(self, n_micro: int):
        if n_micro not in self.schedules:
            self.schedules[n_micro] = Schedule1F1B(self.stage, n_microbatches=n_micro, loss_fn=mse)
        return self.schedules[n_micro]
