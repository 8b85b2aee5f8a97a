# expect: DSY001 at line 18
# expect: DSY001 at line 25
"""The grid decides which tests split a group: the pipeline group spans every stage, so a
test of the stage around a collective on it leaves the other stages waiting; and a
data-parallel group built with the context-parallel ranks spans them, so a test of the
context-parallel rank splits it. (Tests along axes the group does not span are quiet:
quiet/megatron_stage_test_around_a_data_parallel_reduce.py.)"""
import torch
import torch.distributed as dist
from megatron.core import parallel_state as mpu


def share_loss_scale(scale):
    """Meant for every stage: the last one computes the scale, the others receive it. The
    receivers' broadcast was put under the same test by mistake."""
    t = torch.tensor([scale])
    pp_group = mpu.get_pipeline_model_parallel_group()
    if mpu.is_pipeline_last_stage():
        dist.broadcast(t, src=dist.get_global_rank(pp_group, dist.get_world_size(pp_group) - 1), group=pp_group)
    return t.item()


def sync_stats(stats):
    t = torch.tensor(stats)
    if mpu.get_context_parallel_rank() == 0:
        dist.all_reduce(t, group=mpu.get_data_parallel_group(with_context_parallel=True))
    return t
