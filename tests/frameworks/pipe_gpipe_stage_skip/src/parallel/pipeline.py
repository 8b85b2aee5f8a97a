import torch
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, ScheduleGPipe


def mse(output, target):
    return F.mse_loss(output.squeeze(-1), target)


def build_schedule(module, topo, microbatches: int):
    stage = PipelineStage(module, stage_index=topo.stage, num_stages=topo.num_stages,
                          device=torch.device("cpu"), group=topo.pp_group)
    # every stage gets the loss function: it is what turns on the backward pass
    return ScheduleGPipe(stage, n_microbatches=microbatches, loss_fn=mse)
