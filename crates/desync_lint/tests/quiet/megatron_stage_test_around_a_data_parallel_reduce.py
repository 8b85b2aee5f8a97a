"""Megatron-style training step: only the last pipeline stage holds the loss, so only it
averages the loss over its data-parallel group. Megatron builds every group from one grid of
ranks (tp, cp, dp, pp): the members of a data-parallel group all sit on the same pipeline
stage, so they all take the branch together. The same holds for the checkpoint loader below:
the data-parallel replicas other than the first skip the whole block, and its broadcasts run
on the model-parallel group (tensor x pipeline), whose members all share one data-parallel
rank."""
import torch
import torch.distributed as dist
from megatron.core import parallel_state as mpu


def average_loss(losses):
    loss = torch.stack(losses).mean()
    if mpu.is_pipeline_last_stage(ignore_virtual=True):
        dp_group = mpu.get_data_parallel_group(with_context_parallel=True)
        dist.all_reduce(loss, group=dp_group)
        loss /= dist.get_world_size(dp_group)
    return loss


def load_checkpoint(model, state_dict):
    dp_rank = mpu.get_data_parallel_rank()
    mp_group = mpu.get_model_parallel_group()
    src = dist.get_global_rank(mp_group, 0)

    def broadcast_entry(name, tensor):
        nonlocal mp_group
        shape = [state_dict[name].shape if dist.get_rank() == src else None]
        dist.broadcast_object_list(shape, src=src, group=mp_group)
        buffer = torch.empty(shape[0]) if tensor is None else tensor
        dist.broadcast(buffer, src=src, group=mp_group)
        return buffer

    if dp_rank == 0:
        for name, param in model.named_parameters():
            param.data.copy_(broadcast_entry(name, param.data))
    for param in model.parameters():
        dist.broadcast(param.data, src=mpu.get_data_parallel_src_rank(), group=mpu.get_data_parallel_group())
