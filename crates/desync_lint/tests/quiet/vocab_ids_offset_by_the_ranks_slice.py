"""Top-k over a vocabulary split across the tensor-parallel ranks. Each rank picks its k best
ids within its own slice and shifts them by where the slice starts: the offset is a number
(Megatron's VocabUtility returns the slice's first and last index), so every rank gathers a
tensor of the same shape and only the values differ."""
import torch
import torch.distributed as dist
from megatron.core.parallel_state import (
    get_tensor_model_parallel_group,
    get_tensor_model_parallel_rank,
    get_tensor_model_parallel_world_size,
)
from megatron.core.tensor_parallel.utils import VocabUtility


def global_topk(vocab_parallel_logits, topk):
    rank = get_tensor_model_parallel_rank()
    world_size = get_tensor_model_parallel_world_size()
    partition_vocab_size = vocab_parallel_logits.size(-1)
    vocab_start_index, _ = VocabUtility.vocab_range_from_per_partition_vocab_size(
        partition_vocab_size, rank, world_size
    )
    local_k = min(topk, partition_vocab_size)
    logps, ids = torch.topk(vocab_parallel_logits.log_softmax(-1), k=local_k, dim=-1)
    ids = ids + vocab_start_index
    gathered_logps = [torch.empty_like(logps) for _ in range(world_size)]
    gathered_ids = [torch.empty_like(ids) for _ in range(world_size)]
    group = get_tensor_model_parallel_group()
    dist.all_gather(gathered_logps, logps, group=group)
    dist.all_gather(gathered_ids, ids, group=group)
    all_logps = torch.cat(gathered_logps, dim=-1)
    all_ids = torch.cat(gathered_ids, dim=-1)
    best, positions = torch.topk(all_logps, k=topk, dim=-1)
    return best, torch.gather(all_ids, -1, positions)
