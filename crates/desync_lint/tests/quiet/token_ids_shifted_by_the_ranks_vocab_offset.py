"""Global top-k over vocab-parallel logits: each tensor-parallel rank takes the top k of its own
vocabulary shard and shifts the ids by where its shard starts (`tp_rank * shard_size`). The
shift changes the ids' values, not how many there are: every rank gathers k ids per token."""
import torch
import torch.distributed as dist
from megatron.core import parallel_state as mpu


def vocab_parallel_topk(logits, k):
    tp_size = mpu.get_tensor_model_parallel_world_size()
    tp_rank = mpu.get_tensor_model_parallel_rank()
    tp_group = mpu.get_tensor_model_parallel_group()
    shard_size = logits.shape[-1]
    values, ids = torch.topk(logits, k=k, dim=-1)
    ids = ids + tp_rank * shard_size
    all_values = [torch.empty_like(values) for _ in range(tp_size)]
    all_ids = [torch.empty_like(ids) for _ in range(tp_size)]
    dist.all_gather(all_values, values, group=tp_group)
    dist.all_gather(all_ids, ids, group=tp_group)
    merged, where = torch.topk(torch.cat(all_values, dim=-1), k=k, dim=-1)
    return merged, torch.gather(torch.cat(all_ids, dim=-1), -1, where)
